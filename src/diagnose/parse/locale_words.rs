//! The words a shell prints for a job that died of a signal, as the shells
//! of a cluster print them in other locales, read from the real translation
//! catalogues Debian 12 (bookworm) ships:
//!
//! - bash 5.2 on glibc prints `strsignal()`, so the word itself comes from
//!   glibc's `libc.mo` (package libc-l10n 2.36-9+deb12u14), and the
//!   ` (core dumped)` suffix and the batch script's `%s: line %d: ` prefix
//!   from bash's own `bash.mo` (bash 5.2.15-2+b8), which also translates its
//!   fallback signal list (used where `strsignal` is missing);
//! - coreutils 9.1-1 `coreutils.mo` (`timeout`, `kill -l`, `env`, gnulib's
//!   signal list);
//! - zsh 5.9-4 ships no message catalogue at all: its `zsh: killed`,
//!   `segmentation fault`, `bus error`, `terminated` are fixed English words
//!   in the binary, read by [`super::shell`].
//!
//! Each entry was read from `/usr/share/locale/<ll>/LC_MESSAGES/{libc,bash,
//! coreutils}.mo` for zh_CN, ja, de, fr and es (msgid = the English word).

use std::sync::LazyLock;

use regex::Regex;

/// (translated word, the English word it stands for), every distinct
/// translation of the five death signals in the three catalogues.
pub const SIGNAL_WORDS: &[(&str, &str)] = &[
    // zh_CN: libc, bash and coreutils agree except for Aborted.
    ("已杀死", "Killed"),
    ("段错误", "Segmentation fault"),
    ("总线错误", "Bus error"),
    ("已终止", "Terminated"),
    ("已放弃", "Aborted"),
    ("已中止", "Aborted"),
    // ja: libc and coreutils; bash.mo's own list leaves most words English.
    ("強制終了", "Killed"),
    ("セグメンテーションフォルト", "Segmentation fault"),
    ("バスエラー", "Bus error"),
    ("中止", "Aborted"),
    // de: libc, bash.mo, coreutils.
    ("Getötet", "Killed"),
    ("Abgebrochen (Killed)", "Killed"),
    ("Gewaltsam beendet", "Killed"),
    ("Speicherzugriffsfehler", "Segmentation fault"),
    ("Adressierungsfehler", "Segmentation fault"),
    ("Segmentierungsverletzung", "Segmentation fault"),
    ("Bus-Zugriffsfehler", "Bus error"),
    ("Bus-Fehler", "Bus error"),
    ("Systembusfehler", "Bus error"),
    ("Abgebrochen (Terminated)", "Terminated"),
    ("Beendet", "Terminated"),
    ("Abgebrochen", "Aborted"),
    // fr: libc, bash.mo (= coreutils for these).
    ("Processus arrêté", "Killed"),
    ("Tué", "Killed"),
    ("Erreur de segmentation", "Segmentation fault"),
    ("Erreur du bus", "Bus error"),
    ("Erreur de bus", "Bus error"),
    ("Complété", "Terminated"),
    ("Terminé", "Terminated"),
    ("Abandon", "Aborted"),
    ("Abandonné", "Aborted"),
    // es: libc, bash.mo, coreutils.
    ("Terminado (killed)", "Killed"),
    ("Terminado (con kill)", "Killed"),
    ("Matado", "Killed"),
    ("Violación de segmento", "Segmentation fault"),
    ("Fallo de segmentación", "Segmentation fault"),
    ("Error del bus", "Bus error"),
    ("Error de bus", "Bus error"),
    ("Terminado", "Terminated"),
    ("Abortado", "Aborted"),
];

/// bash.mo's ` (core dumped)` in the same locales (fr keeps the English).
const CORE_DUMPED: &[&str] = &[
    "(core dumped)",
    "（核心已转储）",
    "(コアダンプ)",
    "(Speicherabzug geschrieben)",
    "(`core' generado)",
];

/// bash's job line in a batch script (`%s: line %d: ` in every locale above:
/// `: 第 25 行：`, `: 25 行: `, `: Zeile 25: `, ` : ligne 25 : `,
/// `: línea 25: `) or job control's `[1]+  `, then the PID.
const PREFIX: &str = r"(?:.*[:：] ?(?:(?:line|Zeile|ligne|línea) [0-9]+ ?|第 [0-9]+ 行|[0-9]+ 行) ?[:：] *[0-9]+ +|\[[0-9]+\][+-]? +)?";

static LOCALIZED: LazyLock<Regex> = LazyLock::new(|| {
    let mut words: Vec<&str> = SIGNAL_WORDS.iter().map(|(w, _)| *w).collect();
    // Longest first: "Abgebrochen (Killed)" before "Abgebrochen".
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    let alt = |v: &[&str]| {
        v.iter()
            .map(|w| regex::escape(w))
            .collect::<Vec<_>>()
            .join("|")
    };
    Regex::new(&format!(
        r"^{PREFIX}({})(?:\s*(?:{}))?(?:\s+\S.*)?$",
        alt(&words),
        alt(CORE_DUMPED)
    ))
    .expect("static regex")
});

/// The English signal word for a line that is a shell's report in one of the
/// catalogued locales (`已杀死`, `…: Zeile 3: 4242 Getötet  python …`).
pub fn shell_signal_word(line: &str) -> Option<&'static str> {
    let word = LOCALIZED.captures(line)?.get(1)?.as_str();
    SIGNAL_WORDS
        .iter()
        .find(|(w, _)| *w == word)
        .map(|(_, english)| *english)
}

/// Whether a line holds a translated word at all, for the trigger prefilter:
/// the first characters of every catalogued word.
pub const TRIGGERS: &[&str] = &[
    "已杀死",
    "段错误",
    "总线错误",
    "已终止",
    "已放弃",
    "已中止",
    "強制終了",
    "セグメンテーション",
    "バスエラー",
    "中止",
    "Getötet",
    "Abgebrochen",
    "Gewaltsam beendet",
    "Speicherzugriffsfehler",
    "Adressierungsfehler",
    "Segmentierungsverletzung",
    "Bus-Zugriffsfehler",
    "Bus-Fehler",
    "Systembusfehler",
    "Beendet",
    "Processus arrêté",
    "Tué",
    "Erreur de segmentation",
    "Erreur du bus",
    "Erreur de bus",
    "Complété",
    "Terminé",
    "Abandon",
    "Terminado",
    "Matado",
    "Violación de segmento",
    "Fallo de segmentación",
    "Error del bus",
    "Error de bus",
    "Abortado",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogued_word_has_a_trigger_and_reads_back_alone() {
        for (word, english) in SIGNAL_WORDS {
            assert!(
                TRIGGERS.iter().any(|t| word.contains(t)),
                "{word} has no trigger"
            );
            assert_eq!(shell_signal_word(word), Some(*english), "{word}");
        }
    }

    #[test]
    fn batch_script_lines_in_each_locale() {
        let cases = [
            (
                "/var/spool/slurmd/job42/slurm_script: 第 25 行：1613720 已杀死               python train.py",
                "Killed",
            ),
            (
                "/var/spool/slurmd/job42/slurm_script: 25 行: 1613720 強制終了            python train.py",
                "Killed",
            ),
            (
                "/var/spool/slurmd/job42/slurm_script: Zeile 25: 1613720 Speicherzugriffsfehler (Speicherabzug geschrieben) python train.py",
                "Segmentation fault",
            ),
            (
                "/var/spool/slurmd/job42/slurm_script : ligne 25 : 1613720 Processus arrêté         python train.py",
                "Killed",
            ),
            (
                "/var/spool/slurmd/job42/slurm_script: línea 25: 1613720 Terminado (killed)       python train.py",
                "Killed",
            ),
            ("[1]+  Abgebrochen (Killed)    python train.py", "Killed"),
            ("段错误 (核心已转储)", "Segmentation fault"),
        ];
        for (line, want) in cases {
            assert_eq!(shell_signal_word(line), Some(want), "{line}");
        }
        // A translated word inside prose is not the shell's report.
        assert_eq!(shell_signal_word("Der Job wurde Beendet, weil"), None);
        assert_eq!(
            shell_signal_word("epoch 3 Terminado el entrenamiento"),
            None
        );
    }
}
