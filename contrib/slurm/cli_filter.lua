--[[
headroom's pre-submit check for Slurm (cli_filter/lua, Slurm 20.11+).

Install: copy this file as cli_filter.lua next to slurm.conf on every host
users submit from, and set CliFilterPlugins=cli_filter/lua in slurm.conf
(docs/slurm.md, "The pre-submit check"). sbatch then runs
`headroom check` on the batch script being submitted, with the memory and
CPUs of its command line, and prints the verdict; with action = "reject" it
refuses a job whose plan does not fit.

Only sbatch is checked: srun and salloc (and srun steps inside a job) pass
untouched. A script headroom cannot read (not a GNN training, a script on
stdin), a missing headroom binary or any failure of headroom itself never
blocks a submission: the filter only refuses a job headroom has read and
found not to fit.

The file runs inside sbatch with the user's rights; Slurm's cli_filter is
advice, not enforcement (a user can point SLURM_CONF elsewhere).
]]

-- Site settings.
local settings = {
  -- The headroom binary: a path, or a name looked up on PATH.
  headroom = "headroom",
  -- "warn": print the verdict and submit anyway; "reject": refuse a job
  -- that does not fit; "off": do nothing.
  action = "warn",
  -- Let a user choose per submission with HEADROOM_CLI_FILTER=off|warn|reject.
  user_override = true,
  -- More arguments for every check, e.g. "--gpu a100-80gb --shm 64G".
  extra_args = "",
  -- Seconds headroom may take before the check is given up (0: no limit).
  timeout_s = 30,
  -- Print a line when headroom could not read a job (most jobs on a
  -- cluster are no GNN training; off by default).
  explain_skips = false,
}

local function say(text)
  io.stderr:write("headroom: " .. text .. "\n")
end

-- A word for sh: single quotes, each ' closed, escaped and reopened.
local function quote(word)
  return "'" .. string.gsub(word, "'", "'\\''") .. "'"
end

-- The exit status of a shell command, in Lua 5.1 (system()'s wait status)
-- and in 5.2+ (true|nil, "exit"|"signal", n).
local function run(cmd)
  local a, how, code = os.execute(cmd)
  if type(a) == "number" then
    if a >= 256 then
      return math.floor(a / 256)
    end
    return a
  end
  if how == "exit" then
    return code
  end
  return -1
end

local function read_all(path)
  local f = io.open(path, "r")
  if not f then
    return ""
  end
  local text = f:read("*a") or ""
  f:close()
  return text
end

-- The verdict block of `headroom check`'s text: the FITS / DOES NOT FIT
-- line and the indented lines under it.
local function verdict_block(text)
  local lines, inside = {}, false
  for line in string.gmatch(text, "[^\n]*") do
    if string.find(line, "^FITS") or string.find(line, "^DOES NOT FIT") then
      inside = true
      table.insert(lines, line)
    elseif inside and string.find(line, "^  ") then
      table.insert(lines, line)
    elseif inside and line ~= "" then
      break
    end
  end
  return lines
end

-- The action in force for this submission.
local function action()
  local wanted = settings.action
  local user = os.getenv("HEADROOM_CLI_FILTER")
  if settings.user_override and user and user ~= "" then
    wanted = user
  end
  if wanted ~= "warn" and wanted ~= "reject" and wanted ~= "off" then
    say("HEADROOM_CLI_FILTER=" .. tostring(wanted) .. " is none of off, warn, reject: warning only")
    return "warn"
  end
  return wanted
end

-- The script sbatch submits: its file, or a --wrap command written to a
-- file in the submit directory (relative paths in it then mean what they
-- mean to the job). Returns the path and whether it must be removed.
local function batch_script(options)
  local argv = options.argv
  if argv and argv[1] then
    return argv[1], false
  end
  local wrap = options.wrap
  if wrap and wrap ~= "" then
    local dir = os.getenv("PWD") or "."
    math.randomseed(os.time())
    local path = string.format("%s/.headroom-wrap-%d-%d.sh", dir, os.time(), math.random(1, 1000000000))
    local f = io.open(path, "w")
    if not f then
      return nil, false
    end
    f:write("#!/bin/sh\n", wrap, "\n")
    f:close()
    return path, true
  end
  return nil, false
end

-- headroom check's flags for what sbatch's command line (and the
-- script's #SBATCH lines, which sbatch has already read) asked for.
local function budget_args(options)
  local args = {}
  local function pass(option, flag)
    local v = options[option]
    if v and v ~= "" and v ~= "0" and v ~= "invalid-context" then
      table.insert(args, flag .. " " .. quote(v))
    end
  end
  pass("mem", "--mem")
  pass("mem-per-cpu", "--mem-per-cpu")
  pass("mem-per-gpu", "--mem-per-gpu")
  pass("cpus-per-task", "--cpus")
  return table.concat(args, " ")
end

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
  -- srun and salloc have no --wrap: Slurm answers "invalid-context".
  if options.wrap == "invalid-context" then
    return slurm.SUCCESS
  end
  local act = action()
  if act == "off" then
    return slurm.SUCCESS
  end
  local script, remove = batch_script(options)
  if not script then
    if settings.explain_skips then
      say("the batch script came on stdin: not checked")
    end
    return slurm.SUCCESS
  end
  local out = os.tmpname()
  local cmd = quote(settings.headroom) .. " check " .. quote(script) .. " " .. budget_args(options) .. " " .. settings.extra_args
  if settings.timeout_s > 0 and run("command -v timeout >/dev/null 2>&1") == 0 then
    cmd = "timeout " .. settings.timeout_s .. " " .. cmd
  end
  local status = run(cmd .. " >" .. quote(out) .. " 2>&1 </dev/null")
  local text = read_all(out)
  os.remove(out)
  if remove then
    os.remove(script)
  end
  if status == 0 then
    local lines = verdict_block(text)
    if lines[1] then
      say(lines[1])
    end
    return slurm.SUCCESS
  end
  if status ~= 1 then
    -- 2: headroom could not read the job (no training in it, bad input);
    -- 124: timed out; 127: not installed. Never a reason to refuse.
    if settings.explain_skips then
      local first = string.match(text, "[^\n]+") or ("exit status " .. status)
      say("not checked: " .. first)
    end
    return slurm.SUCCESS
  end
  for _, line in ipairs(verdict_block(text)) do
    say(line)
  end
  local whole = "the whole plan: headroom plan " .. quote(script)
  if remove then
    whole = "the whole plan: headroom plan on a script holding the --wrap command"
  end
  if act == "reject" then
    say("job refused: it does not fit (" .. whole .. ")")
    return slurm.ERROR
  end
  say("submitted anyway (" .. whole .. ")")
  return slurm.SUCCESS
end
