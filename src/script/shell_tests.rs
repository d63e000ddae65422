use super::*;

fn cmd(line: usize, text: &str) -> Item {
    Item::Cmd(Cmd {
        line,
        text: text.into(),
    })
}

#[test]
fn continuations_keep_the_first_line_and_comments_go() {
    let text = "# pretrain\npython a.py --x 1 \\\n    --y 2  # note\n\nB=\"a # b\"\n";
    assert_eq!(
        items(text),
        vec![cmd(2, "python a.py --x 1 --y 2"), cmd(5, "B=\"a # b\"")]
    );
}

#[test]
fn separators_split_commands_but_redirections_stay() {
    let got =
        items("cd src && nohup python t.py > log 2>&1 &\npython x.py |& tee out.log; echo done\n");
    assert_eq!(
        got,
        vec![
            cmd(1, "cd src"),
            cmd(1, "nohup python t.py > log 2>&1"),
            cmd(2, "python x.py"),
            cmd(2, "tee out.log"),
            cmd(2, "echo done"),
        ]
    );
}

#[test]
fn loops_nest_and_control_words_are_dropped() {
    let text = "for lr in 0.1 0.01; do\n  for bs in 512 1024\n  do\n    python t.py --lr $lr --bs $bs\n  done\ndone\nif [ -f x ]; then\n  python y.py\nfi\n";
    let got = items(text);
    let inner = Item::For {
        line: 2,
        var: "bs".into(),
        words: "512 1024".into(),
        body: vec![cmd(4, "python t.py --lr $lr --bs $bs")],
    };
    assert_eq!(
        got[0],
        Item::For {
            line: 1,
            var: "lr".into(),
            words: "0.1 0.01".into(),
            body: vec![inner]
        }
    );
    assert_eq!(got[1..], [cmd(7, "[ -f x ]"), cmd(8, "python y.py")]);
}

#[test]
fn sbatch_lines_keep_their_comment_text() {
    let got = items("#!/bin/bash\n#SBATCH --mem=64G # per node\n");
    assert_eq!(got, vec![cmd(2, "#SBATCH --mem=64G # per node")]);
}
