//! The manual pages, rendered by `clap_mangen` from the same clap
//! definitions that parse the command line, so a page cannot drift from the
//! flags: `headroom man > headroom.1` for the command, `headroom man plan >
//! headroom-plan.1` for one verb (as git names its pages).

use crate::error::{Error, Result};

/// The roff page of `cmd`, or of its subcommand `verb` when one is named.
pub fn render(cmd: clap::Command, verb: Option<&str>) -> Result<Vec<u8>> {
    // Help and version flags are added when the command is built; without
    // this the page would list only the flags written in the source.
    let mut cmd = cmd;
    cmd.build();
    let page = match verb {
        None => cmd,
        Some(v) => {
            let sub = cmd
                .get_subcommands()
                .find(|s| !s.is_hide_set() && s.get_name() == v)
                .cloned();
            let Some(sub) = sub else {
                let known: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                return Err(Error::bad(format!(
                    "no manual page for '{v}': one of {}",
                    known.join(", ")
                )));
            };
            // The page's name and synopsis read `headroom-plan` and
            // `headroom plan`, not the bare verb.
            sub.name(format!("headroom-{v}"))
                .bin_name(format!("headroom {v}"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Error::Internal(format!("manual page: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::render;

    #[test]
    fn the_page_of_a_verb_lists_its_flags_and_an_unknown_verb_is_refused() {
        let page =
            String::from_utf8(render(crate::cli::Cli::command(), Some("plan")).unwrap()).unwrap();
        assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
        assert!(page.contains("headroom\\-plan"), "{page}");
        assert!(page.contains("\\-\\-gpu"), "{page}");
        let err = render(crate::cli::Cli::command(), Some("fly")).unwrap_err();
        assert!(err.to_string().contains("plan"), "{err}");
        assert!(render(crate::cli::Cli::command(), Some("__malloc-probe")).is_err());
    }
}
