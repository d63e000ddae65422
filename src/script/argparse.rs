//! The script's argparse definitions and the values it runs with: every
//! `add_argument(...)` (option strings, `dest`, `type`, `default`, `nargs`,
//! `action='store_true'`), `set_defaults(...)`, then the command line the
//! launch passes, parsed as argparse would: `--opt v`, `--opt=v`, unique
//! prefixes (`allow_abbrev`), `nargs='+'` lists, and a dash or underscore
//! spelling only when the script defines it (argparse does not fold them).
//! A value the command line gives is traced to the launch line; a default
//! to its `add_argument` line.

use std::collections::HashMap;

use tree_sitter::Node;

use super::eval::Eval;
use super::py::{Found, Value, call_args, callee_name};

/// One `add_argument` call.
#[derive(Debug, Clone)]
pub struct Argument {
    /// `--batch-size`, `-b`...
    pub options: Vec<String>,
    /// Where the value is stored (`args.<dest>`).
    pub dest: String,
    /// `type=` as written: int, float, str, or something else.
    pub kind: String,
    /// `nargs` takes a list.
    pub list: bool,
    /// store_true / store_false: the value set when the flag is given.
    pub flag: Option<bool>,
    /// The default, when it can be computed.
    pub default: Option<Found>,
}

/// Reads every `add_argument` in the script.
pub fn definitions<'t>(ev: &Eval<'t>) -> Vec<Argument> {
    let mut out: Vec<Argument> = Vec::new();
    let mut set_defaults: Vec<(String, Option<Found>)> = Vec::new();
    // A parser in an imported module's `__main__` block is not this run's
    // (train.py's own options, when train_large.py imports a constant from it).
    for call in ev
        .calls()
        .filter(|c| super::run_order::dead_main_block(ev, *c).is_none())
    {
        match callee_name(ev.src(call), call) {
            "add_argument" => out.extend(argument(ev, call)),
            "set_defaults" => {
                let a = call_args(ev.src(call), call);
                for (k, v) in a.keywords {
                    set_defaults.push((k, ev.eval(v)));
                }
                // `parser.set_defaults(**cfg)`: every key of the config.
                for s in a.splats {
                    set_defaults.extend(ev.splat(s, &Vec::new(), 0));
                }
            }
            _ => {}
        }
    }
    for (k, v) in set_defaults {
        if let Some(a) = out.iter_mut().find(|a| a.dest == k) {
            a.default = v.or(a.default.take());
        }
    }
    out.extend(super::dataclass_cli::definitions(ev));
    out
}

fn argument<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<Argument> {
    let src = ev.src(call);
    let args = call_args(src, call);
    let options: Vec<String> = args
        .positional
        .iter()
        .filter_map(|n| super::eval::string_value(src, *n))
        .collect();
    let kw = |name: &str| {
        args.keywords
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    };
    let long = options.iter().find(|o| o.starts_with("--"));
    let dest = match kw("dest").and_then(|n| super::eval::string_value(src, n)) {
        Some(d) => d,
        None => long
            .or(options.first())?
            .trim_start_matches('-')
            .replace('-', "_"),
    };
    let action = kw("action").and_then(|n| super::eval::string_value(src, n));
    let flag = match action.as_deref() {
        Some("store_true") => Some(true),
        Some("store_false") => Some(false),
        _ => None,
    };
    let nargs = kw("nargs").map(|n| src.text_of(n).trim_matches(['"', '\'']).to_string());
    let list = matches!(nargs.as_deref(), Some("+" | "*"))
        || nargs
            .as_deref()
            .is_some_and(|n| n.parse::<u32>().is_ok_and(|k| k > 1));
    let mut default = kw("default").and_then(|n| ev.eval(n));
    if default.is_none()
        && let Some(f) = flag
    {
        default = Some(Found::at(Value::Bool(!f), src.at(call)));
    }
    if default.is_none() && kw("default").is_none() {
        default = Some(Found::at(Value::None, src.at(call)));
    }
    Some(Argument {
        options,
        dest,
        kind: kw("type").map_or("str", |t| src.text_of(t)).to_string(),
        list,
        flag,
        default,
    })
}

/// An option the script does not define, with the word after it.
pub type Refused = (String, Option<String>);

/// The values the script runs with, by dest, and the options argparse would
/// refuse (not defined by the script), each with the word that follows it.
/// A value is at `launch_at`, and first at its option's own line when the
/// command goes on over several (`option_at`).
pub fn values(
    defs: &[Argument],
    argv: &[String],
    launch_at: &str,
    option_at: &HashMap<String, String>,
) -> (HashMap<String, Found>, Vec<Refused>) {
    let mut out: HashMap<String, Found> = defs
        .iter()
        .filter_map(|a| Some((a.dest.clone(), a.default.clone()?)))
        .collect();
    let mut unknown = Vec::new();
    // Positional arguments (`add_argument("dataset_name")`) take the words
    // that are not options' values, in the order they are defined.
    let mut positional = defs
        .iter()
        .filter(|d| d.options.first().is_some_and(|o| !o.starts_with('-')));
    let mut i = 0;
    while i < argv.len() {
        let word = &argv[i];
        i += 1;
        if !word.starts_with('-') || is_number(word) {
            if let Some(def) = positional.next() {
                let value = if def.list {
                    list_value(def, vec![word.clone()], argv, &mut i)
                } else {
                    typed(&def.kind, word)
                };
                out.insert(def.dest.clone(), Found::at(value, launch_at));
            }
            continue;
        }
        let (opt, inline) = match word.split_once('=') {
            Some((o, v)) => (o, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let Some(def) = find(defs, opt) else {
            // The word after an unknown option is its value, when it is not an option.
            let value = inline.or_else(|| {
                let next = argv
                    .get(i)
                    .filter(|w| !w.starts_with('-') || is_number(w))?;
                i += 1;
                Some(next.clone())
            });
            unknown.push((opt.to_string(), value));
            continue;
        };
        let value = if let Some(f) = def.flag {
            Value::Bool(f)
        } else if def.list {
            list_value(def, inline.into_iter().collect(), argv, &mut i)
        } else {
            let text = match inline {
                Some(v) => v,
                None if i < argv.len() => {
                    i += 1;
                    argv[i - 1].clone()
                }
                None => String::new(),
            };
            typed(&def.kind, &text)
        };
        // An option on a continued line: its own line, then the command's.
        let mut found = Found::at(value, option_at.get(opt).map_or(launch_at, String::as_str));
        if option_at.contains_key(opt) {
            found.from.push(launch_at.to_string());
        }
        out.insert(def.dest.clone(), found);
    }
    (out, unknown)
}

/// A list argument (`nargs`): `items` so far, then the words from `argv[*i]`
/// up to the next option, typed.
fn list_value(def: &Argument, mut items: Vec<String>, argv: &[String], i: &mut usize) -> Value {
    while *i < argv.len() && (!argv[*i].starts_with('-') || is_number(&argv[*i])) {
        items.push(argv[*i].clone());
        *i += 1;
    }
    Value::List(items.iter().map(|s| typed(&def.kind, s)).collect())
}

/// The definition an option word names: exactly, else as the unique prefix
/// of one long option (argparse's allow_abbrev, on by default).
fn find<'a>(defs: &'a [Argument], opt: &str) -> Option<&'a Argument> {
    if let Some(d) = defs.iter().find(|d| d.options.iter().any(|o| o == opt)) {
        return Some(d);
    }
    if !opt.starts_with("--") {
        return None;
    }
    let mut matching = defs.iter().filter(|d| {
        d.options
            .iter()
            .any(|o| o.starts_with("--") && o.starts_with(opt))
    });
    let first = matching.next()?;
    matching.next().is_none().then_some(first)
}

fn is_number(word: &str) -> bool {
    word.parse::<f64>().is_ok()
}

/// A command-line word converted by the argument's `type=`.
fn typed(kind: &str, text: &str) -> Value {
    match kind {
        "str.lower" => Value::Str(text.to_lowercase()),
        "str.upper" => Value::Str(text.to_uppercase()),
        "ast.literal_eval" | "eval" | "bool_flag" | "str2bool" | "strtobool" => {
            match text.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Value::Bool(true),
                "false" | "no" | "0" => Value::Bool(false),
                "none" => Value::None,
                _ => text
                    .parse()
                    .map(Value::Int)
                    .or_else(|_| text.parse().map(Value::Float))
                    .unwrap_or_else(|_| Value::Str(text.into())),
            }
        }
        "int" => text
            .parse()
            .map_or_else(|_| Value::Str(text.into()), Value::Int),
        "float" => text
            .parse()
            .map_or_else(|_| Value::Str(text.into()), Value::Float),
        _ => Value::Str(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(options: &[&str], dest: &str, kind: &str, list: bool, flag: Option<bool>) -> Argument {
        Argument {
            options: options.iter().map(|s| s.to_string()).collect(),
            dest: dest.into(),
            kind: kind.into(),
            list,
            flag,
            default: Some(Found::at(Value::Int(1), "t.py:1")),
        }
    }

    #[test]
    fn the_command_line_is_read_as_argparse_reads_it() {
        let defs = vec![
            def(&["--batch-size", "-b"], "batch_size", "int", false, None),
            def(&["--fan_out"], "fan_out", "int", true, None),
            def(&["--use_gat"], "use_gat", "str", false, Some(true)),
            def(&["--num_workers"], "num_workers", "int", false, None),
        ];
        let argv: Vec<String> = "--batch 512 --fan_out 15 -1 --use_gat --num_workers=4 --lr 0.1"
            .split(' ')
            .map(String::from)
            .collect();
        let (v, unknown) = values(&defs, &argv, "s.sbatch:9", &HashMap::new());
        assert_eq!(v["batch_size"].value, Value::Int(512), "a unique prefix");
        assert_eq!(
            v["fan_out"].value,
            Value::List(vec![Value::Int(15), Value::Int(-1)])
        );
        assert_eq!(v["use_gat"].value, Value::Bool(true));
        assert_eq!(v["num_workers"].value, Value::Int(4));
        assert_eq!(v["num_workers"].from, vec!["s.sbatch:9".to_string()]);
        assert_eq!(unknown, vec![("--lr".to_string(), Some("0.1".to_string()))]);
        // argparse does not fold dashes into underscores: --fan-out is not --fan_out.
        let (_, unknown) = values(
            &defs,
            &["--fan-out".into(), "3".into()],
            "s",
            &HashMap::new(),
        );
        assert_eq!(
            unknown,
            vec![("--fan-out".to_string(), Some("3".to_string()))]
        );
    }
}
