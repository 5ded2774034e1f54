//! The command line: one file per command, the only place that prints. Errors go to stderr
//! as located diagnostics; results go to stdout; the exit code is decided here once. What
//! commands share has a file of its own, never a sibling command: `format` (`--format`),
//! `report` (outcome, JSON version, writers, failures), `revisions` (`cutover` and `diff`),
//! `layout` (`waves`, `plan` and `apply`).

mod apply;
mod blast;
mod build;
mod cache;
mod check;
mod cutover;
mod diff;
mod format;
mod init;
mod layout;
mod markdown;
mod plan;
mod render;
mod report;
mod revisions;
mod schema;
pub mod terminal;
mod waves;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::Error;
use format::Format;
pub use report::Outcome;
use report::{fail, io, Machine};

const AFTER_HELP: &str = "Exit status: 0 fine, 1 findings, 2 bad input or usage.";

#[derive(Parser)]
#[command(
    name = "fluxwave",
    version,
    about = "Split a Flux app tier into dependency-ordered waves and keep it in step with the catalog",
    after_help = AFTER_HELP
)]
struct Cli {
    /// The GitOps repository (default: the current directory)
    #[arg(long, global = true, value_name = "DIR", default_value = ".")]
    repo: PathBuf,
    /// When to colour the output (auto: on a terminal, unless NO_COLOR is set)
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    color: terminal::When,
    #[command(flatten)]
    helm: HelmArgs,
    #[command(subcommand)]
    command: Command,
}

/// How `check`, `cutover`, `build` and `diff` render HelmReleases.
#[derive(clap::Args)]
struct HelmArgs {
    /// The helm program that renders HelmReleases (default: `helm` on the PATH)
    #[arg(long, global = true, value_name = "PATH", env = "FLUXWAVE_HELM")]
    helm: Option<PathBuf>,
    /// The flux-operator program (the Flux Operator CLI) that renders ResourceSets (default:
    /// `flux-operator` on the PATH)
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        env = "FLUXWAVE_FLUX_OPERATOR"
    )]
    flux_operator: Option<PathBuf>,
    /// Do not render HelmReleases: judge each by its values alone
    #[arg(long, global = true, env = "FLUXWAVE_NO_HELM", value_parser = clap::builder::FalseyValueParser::new())]
    no_helm: bool,
    /// Never reach the network, nor let helm reach it: charts come from this repository and
    /// the cache only
    #[arg(long, global = true, env = "FLUXWAVE_OFFLINE", value_parser = clap::builder::FalseyValueParser::new())]
    offline: bool,
    /// The folder of pulled charts and renders (default: $XDG_CACHE_HOME/fluxwave, else
    /// ~/.cache/fluxwave)
    #[arg(long, global = true, value_name = "DIR", env = "FLUXWAVE_CACHE")]
    cache: Option<PathBuf>,
    /// A host charts may be pulled from (repeatable, or comma-separated; `*` for any). Without
    /// it any host may be reached; comparing with a base revision (check --base, diff,
    /// cutover), only the hosts of the base revision's chart sources and its fluxwave.yaml
    /// helm.allowHosts, never hosts the change under review brings (SECURITY.md)
    #[arg(
        long = "allow-host",
        global = true,
        value_name = "HOST",
        env = "FLUXWAVE_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    allow_hosts: Vec<String>,
    /// How long one helm run may take, in seconds: past it, helm is stopped and the release
    /// is not rendered
    #[arg(
        long,
        global = true,
        value_name = "SECS",
        env = "FLUXWAVE_HELM_TIMEOUT",
        default_value_t = crate::process::HELM_TIMEOUT_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    helm_timeout: u64,
    /// How much one helm run may print, in MiB: past it, helm is stopped and the release is
    /// not rendered (nor cached)
    #[arg(
        long,
        global = true,
        value_name = "MIB",
        env = "FLUXWAVE_HELM_OUTPUT_LIMIT",
        default_value_t = crate::process::HELM_OUTPUT_MIB,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    helm_output_limit: u64,
    /// The Kubernetes version charts are rendered for (helm's `--kube-version`; a chart's
    /// `kubeVersion` and `.Capabilities.KubeVersion` read it): set it to your cluster's
    #[arg(
        long,
        global = true,
        value_name = "VERSION",
        env = "FLUXWAVE_KUBE_VERSION",
        default_value = crate::helm::DEFAULT_KUBE_VERSION,
        value_parser = kube_version
    )]
    kube_version: String,
}

/// A Kubernetes version as `--kube-version` takes it.
fn kube_version(v: &str) -> Result<String, String> {
    if crate::helm::valid_kube_version(v) {
        Ok(v.to_string())
    } else {
        Err(format!(
            "`{v}` is no Kubernetes version (write it as v1.37.0 or 1.37)"
        ))
    }
}

impl HelmArgs {
    /// The bounds of each helm run.
    fn limits(&self) -> crate::process::Limits {
        crate::process::Limits::helm(self.helm_timeout, self.helm_output_limit)
    }

    /// How this run renders HelmReleases; `base` as `hosts` takes it.
    fn options(&self, repo: &Path, base: Option<&str>) -> crate::helm::Options {
        if self.no_helm {
            return crate::helm::Options::off();
        }
        let mut options = crate::helm::Options::new(
            self.helm.clone(),
            self.offline,
            self.cache.clone(),
            self.hosts(repo, base),
        );
        options.limits = self.limits();
        options.kube_version = self.kube_version.clone();
        options
    }

    /// The hosts this run may pull charts from; `base` is the revision a comparison starts
    /// from (the one the cluster runs: reviewed and merged), whose chart sources are trusted.
    fn hosts(&self, repo: &Path, base: Option<&str>) -> crate::helm::Hosts {
        use crate::helm::Hosts;
        let allowed: std::collections::BTreeSet<String> = self
            .allow_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        if allowed.contains("*") {
            return Hosts::Any;
        }
        let Some(base) = base else {
            return if allowed.is_empty() {
                Hosts::Any
            } else {
                Hosts::Only(allowed)
            };
        };
        let (repo, base) = (repo.to_path_buf(), base.to_string());
        Hosts::later(move || {
            let mut hosts = allowed.clone();
            // A base that cannot be read trusts nothing more (the comparison itself then says
            // why it cannot read it).
            if let Ok(tree) =
                crate::tree::FileTree::from_git_sharing(&repo, &base, &mut Default::default())
            {
                hosts.extend(crate::helm::source_hosts(&tree));
                if let Ok(Some(config)) = crate::config::Config::from_tree(&tree) {
                    hosts.extend(config.helm_allow_hosts);
                }
            }
            hosts
        })
    }
}

#[derive(Subcommand)]
enum Command {
    /// Write a first fluxwave.yaml from what the repository holds, saying why for each setting
    #[command(
        after_help = "Examples:\n  fluxwave init\n  fluxwave --repo ~/fleet init --catalog   # also one ServiceDefinition per unit\n\nAn existing fluxwave.yaml is never replaced, nor an existing catalog file.\n\nExit status: 0 written, 2 fluxwave.yaml exists or bad input (nothing is written)."
    )]
    Init {
        /// Also draft catalog/: one ServiceDefinition per app-tier unit, its dependencies from
        /// the dependsOn of the units' own Kustomizations
        #[arg(long)]
        catalog: bool,
    },
    /// Every node with its wave, kind, placement and the dependency path that sets its wave
    #[command(
        after_help = "Example:\n  fluxwave --repo examples/homelab waves --format markdown\n\nExit status: 0 fine, 2 bad input (a cycle, an unknown dependency, ...)."
    )]
    Waves {
        #[arg(long, value_parser = format::WAVES, default_value = "text")]
        format: Format,
    },
    /// Which file goes to which wave, and which files must move (read-only)
    #[command(
        after_help = "Example:\n  fluxwave --repo examples/homelab plan --format json\n\nExit status: 0 fine, 2 bad input (a file no unit owns, ...)."
    )]
    Plan {
        #[arg(long, value_parser = format::PLAN, default_value = "text")]
        format: Format,
    },
    /// Move files into their waves and keep the Flux wiring in step (idempotent)
    #[command(
        after_help = "Example:\n  fluxwave --repo examples/homelab apply --dry-run\n\nExit status: 0 done (or nothing to do), 2 bad input; nothing is written then."
    )]
    Apply {
        /// Print the changes, with diffs of edited files, and write nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Every lint, for CI and pre-commit (docs/checks.md explains each code)
    #[command(
        after_help = "Examples:\n  fluxwave --repo examples/homelab check\n  fluxwave check --format github --deny warnings   # in GitHub Actions\n  fluxwave check --base origin/main                # also what Flux would delete\n\nExit status: 0 no errors, 1 errors found (or warnings, with --deny warnings), 2 bad input."
    )]
    Check {
        #[arg(long, value_parser = format::CHECK, default_value = "text")]
        format: Format,
        /// Also report what Flux would delete going from git revision REV to the working tree
        #[arg(long, value_name = "REV")]
        base: Option<String>,
        /// Count warnings as errors (exit 1 on any finding)
        #[arg(long, value_enum, value_name = "LEVEL")]
        deny: Option<check::Deny>,
        /// Say what a finding code catches and how bad it is, instead of checking
        #[arg(long, value_name = "CODE")]
        explain: Option<String>,
        /// Build this environment (entry folder PATH) instead of those found; repeatable
        #[arg(long = "env", value_name = "NAME=PATH", value_parser = env_pair)]
        envs: Vec<(String, String)>,
    },
    /// Every object Flux would delete between two git revisions, with the safe runbook
    #[command(
        after_help = "Example:\n  fluxwave --repo examples/homelab cutover --from origin/main\n  fluxwave cutover --from HEAD~1 --to HEAD --format json\n  fluxwave cutover --each origin/main~20..origin/main    # which commit deletes what\n\nExit status: 0 nothing is deleted (in any step), 1 something would be deleted, 2 bad input (not a git repository, a revision that does not exist)."
    )]
    Cutover {
        /// The revision the cluster runs now (a branch, tag or commit)
        #[arg(long, value_name = "REV", required_unless_present = "each")]
        from: Option<String>,
        /// The revision to go to (default: the working tree)
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        /// Every step of the first-parent history of A..B, one report each (which commit
        /// deletes what, as Flux applies the commits of a push one by one)
        #[arg(long, value_name = "A..B", conflicts_with_all = ["from", "to"])]
        each: Option<String>,
        #[arg(long, value_parser = format::CUTOVER, default_value = "text")]
        format: Format,
        /// Compare this environment (entry folder PATH) instead of those found; repeatable
        #[arg(long = "env", value_name = "NAME=PATH", value_parser = env_pair)]
        envs: Vec<(String, String)>,
    },
    /// The objects each Flux Kustomization applies, built offline, Secret values masked
    #[command(
        after_help = "Examples:\n  fluxwave --repo examples/homelab build | kubeconform -ignore-missing-schemas -summary\n  fluxwave build --kustomization flux-system/apps --format json\n\nEach YAML document follows a comment naming its owner (the Flux Kustomization), its\nenvironment and its file. Secret data and stringData values are printed as ***.\n\nExit status: 0 built, 2 bad input (an unknown environment or Kustomization, one whose build\nfails: the rest is printed)."
    )]
    Build {
        /// Build only this environment (NAME, one of those found), or build the environment
        /// NAME at entry folder PATH instead of those found (NAME=PATH); repeatable
        #[arg(long = "env", value_name = "NAME[=PATH]", value_parser = env_arg)]
        envs: Vec<EnvArg>,
        /// Only the objects this Flux Kustomization (or Flux Operator ResourceSet) applies
        #[arg(long, value_name = "NS/NAME")]
        kustomization: Option<String>,
        #[arg(long, value_parser = format::BUILD, default_value = "yaml")]
        format: Format,
    },
    /// What changes in each Kustomization's objects between two git revisions
    #[command(
        after_help = "Examples:\n  fluxwave --repo examples/homelab diff --from HEAD\n  fluxwave diff --from origin/main --format github >> \"$GITHUB_STEP_SUMMARY\"\n\nAn object is added, removed or modified (its content, or its owner: it moves); a removed or\nmoved object carries cutover's verdict, whether Flux deletes it on the way. Secret values are\nmasked; a Secret whose values change names the keys.\n\nExit status: 0 nothing changes, 1 something changes (as `git diff --exit-code`), 2 bad input."
    )]
    Diff {
        /// The revision the cluster runs now (a branch, tag or commit)
        #[arg(long, value_name = "REV")]
        from: String,
        /// The revision to go to (default: the working tree)
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        #[arg(long, value_parser = format::DIFF, default_value = "text")]
        format: Format,
        /// Compare this environment (entry folder PATH) instead of those found; repeatable
        #[arg(long = "env", value_name = "NAME=PATH", value_parser = env_pair)]
        envs: Vec<(String, String)>,
    },
    /// What a failing unit blocks under each topology, and the longest dependsOn chain
    #[command(
        after_help = "Examples:\n  fluxwave --repo examples/homelab blast\n  fluxwave blast --topology units --format json\n\nA unit's failure blocks the units of every Kustomization that waits, through dependsOn, for\nthe readiness of a Kustomization whose health checks cover it (wait: true or healthChecks).\n\nExit status: 0 reported, 2 bad input (no environment, no catalog for waves or units)."
    )]
    Blast {
        /// The Flux Kustomizations as built (current), or a layout of the catalog
        #[arg(long, value_enum, default_value = "current")]
        topology: blast::Which,
        #[arg(long, value_parser = format::BLAST, default_value = "text")]
        format: Format,
        /// Build this environment (entry folder PATH) instead of those found; repeatable
        #[arg(long = "env", value_name = "NAME=PATH", value_parser = env_pair)]
        envs: Vec<(String, String)>,
    },
    /// Render catalog files into manifests: <svc>.yaml, and <svc>-db.yaml with a database
    #[command(
        after_help = "Examples:\n  fluxwave --repo examples/homelab render catalog/sonarr.yaml              # into the app tier\n  fluxwave --repo examples/homelab render catalog/sonarr.yaml --wave-layout -o /tmp/apps\n\nExit status: 0 written, 2 bad input (located errors; nothing is written)."
    )]
    Render {
        /// Catalog files of the repository (catalog/<svc>.yaml, relative to --repo or to the working directory)
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output folder, created if need be (default: the app tier as the repository lays it out: over the file where it is, a new unit's files in its wave's or its own folder once migrated, else flat)
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
        /// Write into <DIR>/wave-<N>/, N being the unit's wave in the catalog's graph
        #[arg(long)]
        wave_layout: bool,
        /// Leave out ImageRepository, ImagePolicy and the $imagepolicy setter marker
        #[arg(long)]
        no_image_automation: bool,
    },
    /// Prune the cache of pulled charts and renders (--cache)
    #[command(
        after_help = "Example:\n  fluxwave cache gc\n\nExit status: 0 pruned, 2 not fluxwave's cache or an entry could not be removed."
    )]
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Print a shell's completion script
    #[command(
        after_help = "Examples:\n  fluxwave completions bash > ~/.local/share/bash-completion/completions/fluxwave\n  fluxwave completions zsh > \"${fpath[1]}/_fluxwave\"\n  fluxwave completions fish > ~/.config/fish/completions/fluxwave.fish\n\nExit status: 0 printed, 2 usage."
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), every command in it
    #[command(
        after_help = "Example:\n  fluxwave man > ~/.local/share/man/man1/fluxwave.1 && man fluxwave\n\nExit status: 0 printed."
    )]
    Man,
    /// Print the JSON Schema (draft-07) of a ServiceDefinition or of fluxwave.yaml
    #[command(
        after_help = "Example:\n  fluxwave schema --kind service > schemas/service-definition.json\n\nExit status: 0 printed, 2 usage."
    )]
    Schema {
        #[arg(long, value_enum, default_value = "service")]
        kind: schema::Kind,
    },
}

#[derive(Subcommand)]
enum CacheAction {
    /// Remove charts and renders not used for a while, what interrupted runs left, and the
    /// least recently used past a size bound
    #[command(
        after_help = "Examples:\n  fluxwave cache gc\n  fluxwave --cache ~/.cache/fluxwave cache gc --max-age 7 --max-size 256\n\nA run that renders HelmReleases prunes the cache this way once a day, with the defaults.\nNothing a run used in the last hour is removed. Only a folder that fluxwave marked as its\ncache (CACHEDIR.TAG) is pruned, never / or the home folder; a symbolic link in it is\nremoved as itself, never followed.\n\nExit status: 0 pruned (or nothing to prune), 2 the folder is not fluxwave's cache, or an\nentry could not be removed."
    )]
    Gc {
        /// Remove what has not been used for this many days
        #[arg(long, value_name = "DAYS", default_value_t = crate::cache::MAX_AGE_DAYS)]
        max_age: u64,
        /// Then remove the least recently used until the cache holds at most this many MiB
        #[arg(long, value_name = "MIB", default_value_t = crate::cache::MAX_SIZE_MIB)]
        max_size: u64,
    },
}

/// One manual page: fluxwave's own, then each command's (its synopsis, options and examples)
/// as a section of it, so that `man fluxwave` holds everything.
fn man(out: &mut impl Write) -> std::io::Result<()> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    clap_mangen::Man::new(cli.clone()).render(out)?;
    // A command with commands of its own (`cache`) has a section for each of them too.
    let commands = cli.get_subcommands().flat_map(|c| {
        let name = format!("fluxwave {}", c.get_name());
        let inner: Vec<(String, clap::Command)> = c
            .get_subcommands()
            .map(|i| (format!("{name} {}", i.get_name()), i.clone()))
            .collect();
        std::iter::once((name, c.clone())).chain(inner)
    });
    for (name, command) in commands {
        let mut page = Vec::new();
        clap_mangen::Man::new(command.name(name.clone()).bin_name(name.clone()))
            .render(&mut page)?;
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        // Its title and string definitions are the page's already; its sections are ours.
        for line in String::from_utf8_lossy(&page).lines() {
            if [".TH ", ".ie ", ".el "].iter().any(|p| line.starts_with(p)) {
                continue;
            }
            match line.strip_prefix(".SH ") {
                Some(heading) => writeln!(out, ".SS {heading}")?,
                None => writeln!(out, "{line}")?,
            }
        }
    }
    Ok(())
}

/// Why `--env` refuses a value (clap prints it after the value).
#[derive(Debug, thiserror::Error)]
enum EnvPairError {
    #[error("`{0}` is not NAME=PATH (say `--env prod=clusters/prod`)")]
    NotPair(String),
    #[error("`{0}` is not a valid environment name (a DNS-1123 label)")]
    Name(String),
    #[error("`{0}` must be a folder inside the repository")]
    Path(String),
}

/// `--env NAME=PATH`: an environment's name and entry folder.
fn env_pair(s: &str) -> Result<(String, String), EnvPairError> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| EnvPairError::NotPair(s.into()))?;
    if !crate::config::is_dns_label(name) {
        return Err(EnvPairError::Name(name.into()));
    }
    let path = crate::config::repo_relative(path).ok_or_else(|| EnvPairError::Path(path.into()))?;
    Ok((name.to_string(), path))
}

/// `build --env`: one environment to build of those found (`NAME`), or one to build instead
/// of those found (`NAME=PATH`, as `env_pair` reads it).
#[derive(Debug, Clone, PartialEq)]
pub enum EnvArg {
    Name(String),
    Pair(String, String),
}

fn env_arg(s: &str) -> Result<EnvArg, EnvPairError> {
    if s.contains('=') {
        let (name, path) = env_pair(s)?;
        return Ok(EnvArg::Pair(name, path));
    }
    Ok(EnvArg::Name(s.to_string()))
}

/// Runs the command line; `Err` carries the exit code of a failure (already reported).
pub fn run(args: impl IntoIterator<Item = OsString>) -> Result<Outcome, u8> {
    let args: Vec<OsString> = args.into_iter().collect();
    // Read before parsing, so that a refused command line is coloured as asked too.
    terminal::set_when(terminal::when_of(&args));
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return refused(&e),
    };
    // Once per run: every error report renders through the same handler as `check`'s text
    // (set already when the command line runs twice in one process).
    let _ = miette::set_hook(Box::new(|_| Box::new(crate::diag::render::handler(None))));
    terminal::set_when(cli.color);
    let cache = Cache::of(&cli.helm);
    let helm = cli.helm.options(&cli.repo, base(&cli.command));
    crate::flux::resource_set::configure(crate::flux::resource_set::Options {
        program: cli
            .helm
            .flux_operator
            .clone()
            .or_else(|| crate::helm::on_path("flux-operator")),
        cache: cli
            .helm
            .cache
            .clone()
            .unwrap_or_else(crate::helm::default_cache),
        limits: helm.limits,
    });
    crate::helm::configure(helm);
    // The commands that render HelmReleases prune the cache once a day when they are done.
    let renders = !cli.helm.no_helm && renders(&cli.command);
    let mut out = stdout_for(&cli.command);
    // Every command but `schema`, `completions`, `man` and `cache` reads the repository: one
    // that is not a folder is bad input, not an empty repository.
    let machine = machine(&cli.command);
    if reads_repo(&cli.command) && !cli.repo.is_dir() {
        let e = Error::Usage(format!(
            "--repo {}: no such folder (name the GitOps repository's root, or run from it)",
            cli.repo.display()
        ));
        return Err(fail(&e, machine, &mut out));
    }
    let result = execute(cli.command, &cli.repo, &cache, &mut out);
    let _ = out.flush();
    if renders {
        let policy = cache.policy(crate::cache::MAX_AGE_DAYS, crate::cache::MAX_SIZE_MIB);
        crate::cache::prune_daily(&cache.dir, &policy);
    }
    match result {
        Ok(outcome) => Ok(outcome),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(Outcome::Clean)
        }
        Err(e) => Err(fail(&e, machine, &mut out)),
    }
}

/// A command line clap refused, or `--help` and `--version`: printed (help on stdout, with
/// exit 0; a refusal on stderr, with exit 2).
fn refused(e: &clap::Error) -> Result<Outcome, u8> {
    use clap::error::ErrorKind;
    let help = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    // clap's message quotes the arguments (a value it refuses): through the same escaping as
    // every other line.
    let colour = terminal::colour(if help {
        std::io::stdout().is_terminal()
    } else {
        std::io::stderr().is_terminal()
    });
    // (clap's plain form strips escape sequences and what follows an unterminated one: its
    // coloured form keeps the argument whole, for `shown` to escape.)
    let text = e.render().ansi().to_string();
    let text = if colour {
        terminal::shown(&text, true)
    } else {
        terminal::shown(&terminal::without_colour(&text), false)
    };
    if help {
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
        return Ok(Outcome::Clean);
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    Err(2)
}

/// The revision a comparison starts from (the one the cluster runs), if the command compares.
fn base(command: &Command) -> Option<&str> {
    match command {
        Command::Check { base, .. } => base.as_deref(),
        Command::Cutover {
            each: Some(range), ..
        } => Some(range.split_once("..").map_or(range.as_str(), |(a, _)| a)),
        Command::Cutover { from, .. } => Some(from.as_deref().unwrap_or("HEAD")),
        Command::Diff { from, .. } => Some(from.as_str()),
        _ => None,
    }
}

/// Whether the command renders HelmReleases (`check --explain` reads nothing).
fn renders(command: &Command) -> bool {
    matches!(
        command,
        Command::Check { explain: None, .. }
            | Command::Cutover { .. }
            | Command::Build { .. }
            | Command::Diff { .. }
    )
}

/// Whether the command reads the repository.
fn reads_repo(command: &Command) -> bool {
    !matches!(
        command,
        Command::Schema { .. } | Command::Completions { .. } | Command::Man | Command::Cache { .. }
    )
}

/// Stdout as the command writes it: `check` reports diagnostics; the other commands' results
/// name files and objects.
fn stdout_for(command: &Command) -> terminal::Safe<std::io::StdoutLock<'static>> {
    let stdout = std::io::stdout();
    let colour = terminal::colour(stdout.is_terminal());
    let out = terminal::Safe::new(stdout.lock(), colour);
    match command {
        Command::Check {
            format: Format::Github,
            ..
        } => out.diagnostics().workflow_commands(),
        Command::Check { .. } => out.diagnostics(),
        // They print objects whole: a Secret value that masking missed (copied into a
        // ConfigMap) is masked as in a diagnostic.
        Command::Build { .. } | Command::Diff { .. } => out.diagnostics(),
        _ => out,
    }
}

/// The format for programs the command prints in, if it does: bad input is printed in it
/// too. `github` is workflow commands for `check`, a job summary's markdown for `diff`.
fn machine(command: &Command) -> Option<Machine> {
    let format = match command {
        Command::Waves { format }
        | Command::Plan { format }
        | Command::Check { format, .. }
        | Command::Cutover { format, .. }
        | Command::Build { format, .. }
        | Command::Diff { format, .. }
        | Command::Blast { format, .. } => *format,
        _ => return None,
    };
    match (format, command) {
        (Format::Json, _) => Some(Machine::Json),
        (Format::Github, Command::Check { .. }) => Some(Machine::Github),
        (Format::Github, Command::Diff { .. }) => Some(Machine::Markdown),
        _ => None,
    }
}

/// The cache of pulled charts and renders (`--cache`), and the helm timeout its pruning
/// waits out.
struct Cache {
    dir: PathBuf,
    limits: crate::process::Limits,
}

impl Cache {
    fn of(h: &HelmArgs) -> Cache {
        Cache {
            dir: h.cache.clone().unwrap_or_else(crate::helm::default_cache),
            limits: h.limits(),
        }
    }

    fn policy(&self, max_age: u64, max_size: u64) -> crate::cache::Policy {
        crate::cache::Policy::new(max_age, max_size, self.limits.timeout.unwrap_or_default())
    }
}

/// Runs the command, writing its result to `out`.
fn execute(
    command: Command,
    repo: &Path,
    cache: &Cache,
    out: &mut terminal::Safe<std::io::StdoutLock<'static>>,
) -> crate::error::Result<Outcome> {
    match command {
        Command::Init { catalog } => init::run(repo, catalog, out),
        Command::Waves { format } => waves::run(repo, format, out),
        Command::Plan { format } => plan::run(repo, format, out),
        Command::Apply { dry_run } => apply::run(repo, dry_run, out),
        Command::Check {
            explain: Some(code),
            ..
        } => check::explain(&code, out),
        Command::Check {
            format,
            base,
            deny,
            envs,
            ..
        } => check::run(repo, format, base.as_deref(), deny, &envs, out),
        Command::Cutover {
            each: Some(range),
            format,
            envs,
            ..
        } => cutover::run_each(repo, &range, format, &envs, out),
        Command::Cutover {
            from,
            to,
            format,
            envs,
            ..
        } => cutover::run(
            repo,
            from.as_deref().unwrap_or("HEAD"),
            to.as_deref(),
            format,
            &envs,
            out,
        ),
        Command::Build {
            envs,
            kustomization,
            format,
        } => build::run(repo, &envs, kustomization.as_deref(), format, out),
        Command::Diff {
            from,
            to,
            format,
            envs,
        } => diff::run(repo, &from, to.as_deref(), format, &envs, out),
        Command::Blast {
            topology,
            format,
            envs,
        } => blast::run(repo, topology, format, &envs, out),
        Command::Render {
            files,
            output,
            wave_layout,
            no_image_automation,
        } => render::run(
            repo,
            render::Args {
                files: &files,
                out_dir: output.as_deref(),
                wave_layout,
                image_automation: !no_image_automation,
            },
            out,
        ),
        Command::Cache {
            action: CacheAction::Gc { max_age, max_size },
        } => cache::gc(&cache.dir, &cache.policy(max_age, max_size), out),
        Command::Schema { kind } => schema::run(kind, out),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "fluxwave", out);
            Ok(Outcome::Clean)
        }
        Command::Man => man(out).map(|()| Outcome::Clean).map_err(io),
    }
}
