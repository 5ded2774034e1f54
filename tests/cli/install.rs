//! What a newcomer installs beside the binary: shell completions that the real bash loads and
//! that complete commands and values, one manual page holding every command, and `--color`,
//! which overrides NO_COLOR and the terminal test both ways.

use std::process::Command;

use crate::common::TestRepo;

#[test]
fn bash_loads_the_completions_and_they_complete_commands_and_values() {
    let repo = TestRepo::empty();
    let run = repo.run(&["completions", "bash"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let script = repo.path().join("fluxwave.bash");
    std::fs::write(&script, &run.stdout).unwrap();
    // What bash offers after `fluxwave bl` and after `fluxwave blast --topology `.
    let complete = |words: &str, current: usize| {
        let out = Command::new("bash")
            .arg("--norc")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD={current}; _fluxwave fluxwave \"${{COMP_WORDS[{current}]}}\" \"${{COMP_WORDS[{}]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display(),
                current - 1
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(complete("fluxwave bl", 1), "blast\n");
    assert_eq!(
        complete("fluxwave blast --topology ''", 3),
        "current\nwaves\nunits\n"
    );
    assert!(complete("fluxwave ''", 1).lines().any(|w| w == "cutover"));
    for shell in ["zsh", "fish"] {
        let run = repo.run(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains("cutover"), "{shell}: {}", run.stdout);
    }
    assert_eq!(repo.run(&["completions", "tcsh"]).code, 2);
}

#[test]
fn the_manual_page_holds_every_command() {
    let repo = TestRepo::empty();
    let run = repo.run(&["man"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with(".ie"), "{}", &run.stdout[..80]);
    assert_eq!(run.stdout.matches(".TH ").count(), 1);
    for command in [
        "waves", "plan", "apply", "check", "cutover", "blast", "render",
    ] {
        assert!(
            run.stdout
                .contains(&format!(".SH \"FLUXWAVE {}\"", command.to_uppercase())),
            "no section for {command}"
        );
    }
    // A command's options are in its section: `--topology` is blast's.
    let blast = &run.stdout[run.stdout.find(".SH \"FLUXWAVE BLAST\"").unwrap()..];
    assert!(blast[..blast[4..].find(".SH ").unwrap()].contains("topology"));
}

#[test]
fn color_always_and_never_override_the_terminal_test_and_no_color() {
    let repo = TestRepo::example("homelab");
    repo.write("apps/broken.yaml", "kind: [\n");
    // Not a terminal, NO_COLOR set: plain unless asked.
    let plain = repo.run(&["check"]);
    assert!(!plain.stdout.contains('\u{1b}'), "{}", plain.stdout);
    let always = repo.run(&["--color", "always", "check"]);
    assert_eq!(always.code, plain.code);
    assert!(always.stdout.contains("\u{1b}["), "{}", always.stdout);
    let never = repo.run(&["check", "--color=never"]);
    assert_eq!(never.stdout, plain.stdout);
    // A refused command line is coloured as asked too.
    let refused = repo.run(&["--color=always", "waves", "--bogus"]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("\u{1b}["), "{}", refused.stderr);
    assert!(!repo.run(&["waves", "--bogus"]).stderr.contains('\u{1b}'));
}

/// The docs tell users to pin a release tag: it is this version's, everywhere they say it.
#[test]
fn the_tag_the_docs_pin_is_this_version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
    let mut pinned = 0;
    for doc in ["README.md", "docs/ci.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for (at, said) in text
            .match_indices("rev: v")
            .chain(text.match_indices("--tag v"))
        {
            let found = text[at + said.len() - 1..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                .next()
                .unwrap();
            assert_eq!(found, tag, "{doc} pins {found}");
            pinned += 1;
        }
        assert!(text.contains(&format!("key: fluxwave-{tag}")) || doc == "README.md");
    }
    assert!(pinned >= 3, "the docs pin {pinned} tags");
    let hooks = std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).unwrap();
    let hooks: Vec<serde_json::Value> = serde_saphyr::from_str(&hooks).unwrap();
    let ids: Vec<&str> = hooks.iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["fluxwave-check", "fluxwave-check-build"]);
    assert_eq!(hooks[0]["language"], "system");
}
