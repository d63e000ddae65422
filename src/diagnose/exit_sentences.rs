//! Every exit status an input can carry, decoded into its sentence, checked
//! as English: no part of the sentence left empty, none said twice, and a
//! signal's sender never filled with something that is not one (issue 26:
//! `--exit-code 300` printed "usually sent by uncommon for training jobs").

use super::exit::ExitStatus;

/// Every form `--exit-code` accepts, once: 0-255, ksh93's 256+N, Python's
/// negative returncodes, and Slurm's exit:signal pairs both ways round.
fn every_form() -> Vec<String> {
    let mut forms: Vec<String> = (0..=255).map(|n| n.to_string()).collect();
    forms.extend((257..=320).map(|n| n.to_string()));
    forms.extend((1..=64).map(|n| format!("-{n}")));
    forms.extend((0..=255).map(|n| format!("0:{n}")));
    forms.extend((1..=255).map(|n| format!("{n}:0")));
    forms
}

/// The sentence's slots: what stands between its joints.
fn slots(sentence: &str) -> Vec<&str> {
    sentence
        .split(" = ")
        .flat_map(|s| s.split(": "))
        .flat_map(|s| s.split(", "))
        .collect()
}

/// Words that end a sentence only when the part after them is missing.
const DANGLING: &[&str] = &[
    "by", "of", "a", "an", "the", "to", "=", "+", "sent", "usually",
];

/// Words a sender never starts with: a sender is someone or something.
const NOT_A_SENDER: &[&str] = &["uncommon", "rare", "rarely", "unusual", "for", "to", "when"];

#[test]
fn every_exit_status_reads_as_a_whole_sentence() {
    let mut decoded = 0;
    for form in every_form() {
        let Ok(s) = ExitStatus::parse(&form) else {
            continue;
        };
        decoded += 1;
        let m = &s.meaning;
        let words: Vec<&str> = m.split_whitespace().collect();
        assert!(!words.is_empty(), "{form}: empty meaning");
        let last = words[words.len() - 1].trim_end_matches(['.', ',', ':']);
        assert!(!DANGLING.contains(&last), "{form}: ends mid-sentence: {m}");
        for slot in slots(m) {
            assert!(!slot.trim().is_empty(), "{form}: an empty slot in {m:?}");
        }
        let all = slots(m);
        for (i, a) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(a), "{form}: {a:?} twice in {m:?}");
        }
        for pair in words.windows(2) {
            assert!(
                !pair[0].eq_ignore_ascii_case(pair[1]),
                "{form}: {:?} doubled in {m:?}",
                pair[0]
            );
        }
        if let Some(name) = &s.signal_name {
            assert_eq!(m.matches(name.as_str()).count(), 1, "{form}: {m}");
        }
        if let Some(sender) = m.split("usually sent by ").nth(1) {
            let first = sender.split_whitespace().next().unwrap_or("");
            assert!(!NOT_A_SENDER.contains(&first), "{form}: no sender: {m}");
        }
        // Every signal Linux has is named (not "an unnamed signal").
        if let Some(sig) = s
            .signal
            .filter(|&n| (1..=64).contains(&n) && n != 32 && n != 33)
        {
            assert!(s.signal_name.is_some(), "{form}: signal {sig} unnamed");
        }
    }
    assert!(decoded >= 800, "{decoded} statuses decoded");
}

#[test]
fn ksh93s_300_is_the_real_time_signal_44() {
    // 300 = 256 + 44; bash's `kill -l 44` prints RTMIN+10.
    let s = ExitStatus::parse("300").unwrap();
    assert_eq!(s.signal_name.as_deref(), Some("SIGRTMIN+10"));
    assert_eq!(
        s.meaning,
        "256 + 44 (ksh93's way of reporting a killed process) = SIGRTMIN+10, a real-time \
         signal: only a program that means to sends one, never the kernel or Slurm"
    );
}

#[test]
fn watch_names_every_signal_once() {
    use crate::watch::verdict::ExitKind;
    for sig in 1..=70 {
        let said = ExitKind::Signal(sig).describe();
        assert_eq!(said.matches("signal").count(), 1, "{said}");
        assert!(!said.contains("()"), "{said}");
    }
    assert_eq!(
        ExitKind::Signal(44).describe(),
        "killed by signal 44 (SIGRTMIN+10)"
    );
}
