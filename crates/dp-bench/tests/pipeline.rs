//! The reproduction pipeline end to end: writers, runner, index, binary.

use std::path::Path;
use std::process::Command;

use dp_bench::{
    Artifact, Cell, Error, Experiment, Figure, Legend, Mode, PAPERS, ProgressMode, Result,
    RunContext, RunOptions, Series, Status, Table, paper_of, registry, run_all, run_experiments,
};
use tempfile::TempDir;

fn options(out: &Path) -> RunOptions {
    RunOptions {
        mode: Mode::Quick,
        only: Vec::new(),
        out_dir: out.to_owned(),
        blas: None,
        data_dir: None,
        progress: ProgressMode::Silent,
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Split one CSV line into fields (RFC 4180 quoting, no embedded line breaks).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
fn figure_csv_parses_back_to_the_same_numbers() {
    let dir = TempDir::new().expect("create temp dir");
    let a = vec![
        (1.0 / 3.0, 2.0f64.sqrt()),
        (1e-300, 6.02214076e23),
        (-0.0, f64::INFINITY),
        (f64::NAN, f64::NEG_INFINITY),
        (0.1 + 0.2, f64::MAX),
    ];
    let b = vec![(1.0, f64::MIN_POSITIVE), (2.0, -5e-324)];
    let fig = Figure::new("f", "t", "x", "y")
        .with_series(Series::line("a, \"quoted\"", a.clone()))
        .with_series(Series::points("b", b.clone()))
        .with_series(Series::line("empty", vec![]));
    let path = dir.path().join("f.csv");
    fig.write_csv(&path).expect("write csv");
    let text = read(&path);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("series,x,y"));
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    let expected: Vec<(&str, (f64, f64))> = a
        .iter()
        .map(|&p| ("a, \"quoted\"", p))
        .chain(b.iter().map(|&p| ("b", p)))
        .collect();
    assert_eq!(rows.len(), expected.len());
    for (row, (label, (x, y))) in rows.iter().zip(expected) {
        assert_eq!(row.len(), 3, "{row:?}");
        assert_eq!(row[0], label);
        let px: f64 = row[1].parse().expect("x parses");
        let py: f64 = row[2].parse().expect("y parses");
        assert!(same(px, x) && same(py, y), "{row:?} vs ({x}, {y})");
    }
    assert!(
        text.contains(",inf\n") && text.contains("nan,-inf\n"),
        "{text}"
    );
}

#[test]
fn reference_lines_are_in_the_csv() {
    let fig = Figure::new("f", "t", "x", "y")
        .with_series(Series::line("s", vec![(2.0, 1.0), (5.0, 3.0)]))
        .with_ref_line(0.5, Some("baseline"))
        .with_ref_line(0.7, None);
    let csv = fig.to_csv();
    assert!(
        csv.ends_with("baseline,2.0,0.5\nbaseline,5.0,0.5\n"),
        "{csv}"
    );
    assert!(!csv.contains("0.7"));
}

#[test]
fn svg_contains_title_and_legend_labels() {
    let dir = TempDir::new().expect("create temp dir");
    let fig = Figure::new("rdp", "My test title", "order alpha", "epsilon")
        .log_x()
        .log_y()
        .with_series(Series::line(
            "curve-one",
            vec![(1.5, 0.1), (10.0, 2.0), (100.0, 30.0)],
        ))
        .with_series(
            Series::line_with_points("curve-two", vec![(2.0, 0.2), (f64::NAN, 1.0), (50.0, 5.0)])
                .dashed(),
        )
        // Non-positive values on log axes are skipped, not drawn.
        .with_series(Series::points(
            "curve-three",
            vec![(0.0, 1.0), (3.0, -1.0), (4.0, 4.0)],
        ))
        .with_series(Series::line("curve-empty", vec![]))
        .with_ref_line(1.0, Some("reference-line"));
    let path = dir.path().join("rdp.svg");
    fig.write_svg(&path).expect("write svg");
    let svg = read(&path);
    assert!(svg.starts_with("<svg"), "not an SVG document");
    for text in [
        "My test title",
        "order alpha",
        "epsilon",
        "curve-one",
        "curve-two",
        "curve-three",
        "curve-empty",
        "reference-line",
    ] {
        assert!(svg.contains(text), "SVG lacks {text:?}");
    }
}

#[test]
fn degenerate_figures_do_not_panic() {
    let figures = [
        Figure::new("empty", "no series", "x", "y"),
        Figure::new("empty-log", "no series", "x", "y")
            .log_x()
            .log_y(),
        Figure::new("nan", "only nan", "x", "y")
            .with_series(Series::line("nan", vec![(f64::NAN, f64::NAN); 3])),
        Figure::new("one", "one point", "x", "y")
            .with_series(Series::line("one", vec![(1.0, 1.0)]))
            .log_y(),
        Figure::new("flat", "constant", "x", "y")
            .with_series(Series::line_with_points("c", vec![(0.0, 0.0), (1.0, 0.0)])),
        Figure::new("clipped", "fixed range", "x", "y")
            .with_y_range(0.0, 1.0)
            .with_legend(Legend::Hidden)
            .with_series(Series::line(
                "big",
                vec![(0.0, -5.0), (1.0, 0.5), (2.0, 5.0)],
            )),
    ];
    for fig in figures {
        let svg = fig.to_svg().expect("draws");
        assert!(svg.contains(&fig.title));
    }
}

#[test]
fn invalid_figures_are_errors() {
    let bad_id = Figure::new("a/b", "t", "x", "y");
    assert!(matches!(
        bad_id.to_svg(),
        Err(Error::InvalidArtifact { .. })
    ));
    let bad_range = Figure::new("f", "t", "x", "y")
        .log_y()
        .with_y_range(0.0, 1.0);
    assert!(matches!(
        bad_range.to_svg(),
        Err(Error::InvalidArtifact { .. })
    ));
}

#[test]
fn io_errors_name_the_path() {
    let dir = TempDir::new().expect("create temp dir");
    let path = dir.path().join("missing-subdir").join("f.csv");
    let err = Figure::new("f", "t", "x", "y")
        .write_csv(&path)
        .expect_err("no such dir");
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("missing-subdir"), "{err}");
}

#[test]
fn table_csv_and_markdown() {
    let table = Table::new("t", "A table", ["method", "epsilon", "n"])
        .with_row(vec![
            "ObjPert".into(),
            Cell::from(1.0 / 3.0),
            Cell::from(10usize),
        ])
        .with_row(vec![
            "a|b, c".into(),
            Cell::from(f64::INFINITY),
            Cell::from(-2i64),
        ]);
    let csv = table.to_csv();
    let rows: Vec<Vec<String>> = csv.lines().map(csv_fields).collect();
    assert_eq!(rows[0], ["method", "epsilon", "n"]);
    assert_eq!(rows[1][0], "ObjPert");
    assert!(same(rows[1][1].parse().expect("number"), 1.0 / 3.0));
    assert_eq!(rows[2][0], "a|b, c");
    assert_eq!(rows[2][1], "inf");
    let md = table.to_markdown();
    assert!(
        md.starts_with("| method | epsilon | n |\n| --- | ---: | ---: |\n"),
        "{md}"
    );
    assert!(md.contains("| ObjPert | 0.3333 | 10 |"), "{md}");
    assert!(md.contains("a\\|b, c"), "{md}");

    let ragged = Table::new("r", "ragged", ["a", "b"]).with_row(vec![Cell::from(1.0)]);
    assert!(matches!(
        ragged.validate(),
        Err(Error::InvalidArtifact { .. })
    ));
}

#[test]
fn full_registry_run_indexes_every_experiment() {
    let out = TempDir::new().expect("create temp dir");
    let summary = run_all(&options(out.path())).expect("run");
    assert!(summary.success(), "{:?}", summary.outcomes);
    let index = read(&summary.index);
    assert!(index.contains("- Mode: quick"));
    assert!(index.contains("- BLAS: none"));
    assert!(index.contains("nproc"));
    reads_for_an_outsider(&index);
    let experiments = registry();
    assert!(!experiments.is_empty());
    assert_eq!(summary.outcomes.len(), experiments.len());
    for exp in &experiments {
        assert!(
            index.contains(&format!("## `{}`", exp.id())),
            "index lacks {}",
            exp.id()
        );
        assert!(index.contains(exp.paper()));
        assert!(index.contains(exp.description()));
    }
    let data_free: Vec<&str> = experiments
        .iter()
        .filter(|e| !e.needs_data())
        .map(|e| e.id())
        .collect();
    for outcome in &summary.outcomes {
        if let Status::Skipped(why) = &outcome.status {
            // Without a data directory exactly the experiments that need data are skipped.
            assert!(
                !data_free.contains(&outcome.id.as_str()),
                "{}: {why}",
                outcome.id
            );
            assert!(outcome.files.is_empty());
            continue;
        }
        assert!(!outcome.files.is_empty(), "{} wrote nothing", outcome.id);
        for file in &outcome.files {
            assert!(
                out.path().join(file).is_file(),
                "{} missing",
                file.display()
            );
            let link = file.to_string_lossy().replace('\\', "/");
            assert!(
                index.contains(&format!("({link})")),
                "index lacks a link to {link}"
            );
        }
    }
}

/// The index names every paper by its authors and title, and no directory outside the
/// output (the runs write under the system's temp directory and may read data elsewhere).
fn reads_for_an_outsider(index: &str) {
    for p in &PAPERS {
        let first_author = p.authors.split(',').next().unwrap_or_default();
        assert!(
            index.contains(&format!("| {} | {}", p.number, p.authors)),
            "no key entry for paper {}",
            p.number
        );
        assert!(index.contains(first_author) && index.contains(p.title));
    }
    for bad in ["/work", "/home", "/tmp", "../"] {
        assert!(!index.contains(bad), "index contains {bad:?}:\n{index}");
    }
    let temp = std::env::temp_dir().display().to_string();
    assert!(!index.contains(&temp), "index names {temp}");
    // Every experiment section says what it reproduces, citing the paper, and how to read it.
    for exp in registry() {
        let paper = paper_of(exp.paper()).expect("every experiment names a known paper");
        assert!(index.contains(&format!(
            "*Reproduces:* {} ({}). {}",
            exp.paper(),
            paper.short,
            exp.description()
        )));
        assert!(index.contains(&format!("*How to read it:* {}", exp.reading())));
    }
}

/// An experiment that fails on a data directory without the datasets names the missing file
/// in its error; the index shows it relative to `$DPGLM_DATA`, not as an absolute path.
#[test]
fn failures_do_not_leak_local_paths_into_the_index() {
    let out = TempDir::new().expect("create temp dir");
    let data = TempDir::new().expect("create temp dir");
    let options = RunOptions {
        only: vec!["001-table2-amp-vs-dpsgd".to_owned()],
        data_dir: Some(data.path().to_owned()),
        ..options(out.path())
    };
    let summary = run_all(&options).expect("run");
    let Status::Failed(why) = &summary.outcomes[0].status else {
        panic!("{:?}", summary.outcomes[0].status);
    };
    assert!(why.contains(&data.path().display().to_string()), "{why}");
    let index = read(&summary.index);
    assert!(index.contains("$DPGLM_DATA/"), "{index}");
    for bad in ["/work", "/home", "/tmp", "../"] {
        assert!(!index.contains(bad), "index contains {bad:?}:\n{index}");
    }
    assert!(!index.contains(&data.path().display().to_string()));
    assert!(index.contains("| 003 | Raman Arora, Raef Bassily"));
}

#[test]
fn registry_ids_are_unique() {
    let ids: Vec<&str> = registry().iter().map(|e| e.id()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "{ids:?}");
}

#[test]
fn unknown_only_id_lists_the_valid_ones() {
    let out = TempDir::new().expect("create temp dir");
    let mut opts = options(out.path());
    opts.only = vec!["no-such-experiment".to_owned()];
    let err = run_all(&opts).expect_err("unknown id");
    match &err {
        Error::UnknownExperiment { id, valid } => {
            assert_eq!(id, "no-such-experiment");
            assert!(valid.iter().any(|v| v == "001-fig3-rdp-curves"));
        }
        other => panic!("wrong error: {other}"),
    }
    assert!(err.to_string().contains("001-fig3-rdp-curves"));
    assert!(
        !out.path().join("index.md").exists(),
        "nothing is written for a bad selection"
    );
}

/// Test-only experiments with scripted behaviour.
enum Scripted {
    Good,
    Fails,
    Panics,
    NeedsData,
    DuplicateIds,
}

impl Experiment for Scripted {
    fn id(&self) -> &'static str {
        match self {
            Self::Good => "t-good",
            Self::Fails => "t-fails",
            Self::Panics => "t-panics",
            Self::NeedsData => "t-needs-data",
            Self::DuplicateIds => "t-duplicate",
        }
    }
    fn title(&self) -> &'static str {
        "scripted"
    }
    fn paper(&self) -> &'static str {
        "test"
    }
    fn description(&self) -> &'static str {
        "a scripted test experiment"
    }
    fn reading(&self) -> &'static str {
        "read it as a test"
    }
    fn needs_data(&self) -> bool {
        matches!(self, Self::NeedsData)
    }
    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        ctx.progress().set_steps(1);
        ctx.progress().step("only step");
        let fig = Figure::new("fig", "Good figure", "x", "y")
            .with_series(Series::line("s", vec![(0.0, 1.0), (1.0, 2.0)]));
        match self {
            Self::Good => Ok(vec![
                Artifact::figure(fig).with_note("a note for the reader"),
                Artifact::table(
                    Table::new("tab", "Good table", ["k", "v"])
                        .with_row(vec!["answer".into(), Cell::from(42.0)]),
                ),
            ]),
            Self::Fails => Err(Error::Experiment("boom: solver diverged".to_owned())),
            Self::Panics => panic!("scripted panic"),
            Self::NeedsData => Err(Error::Experiment("must not run".to_owned())),
            Self::DuplicateIds => Ok(vec![Artifact::figure(fig.clone()), Artifact::figure(fig)]),
        }
    }
}

#[test]
fn failing_experiments_are_reported_and_others_still_run() {
    let out = TempDir::new().expect("create temp dir");
    let experiments: Vec<Box<dyn Experiment>> = vec![
        Box::new(Scripted::Fails),
        Box::new(Scripted::Panics),
        Box::new(Scripted::NeedsData),
        Box::new(Scripted::DuplicateIds),
        Box::new(Scripted::Good),
    ];
    let summary = run_experiments(&experiments, &options(out.path())).expect("run");
    assert_eq!(summary.failed(), ["t-fails", "t-panics", "t-duplicate"]);
    assert!(!summary.success());
    assert!(matches!(summary.outcomes[2].status, Status::Skipped(_)));
    assert_eq!(summary.outcomes[4].status, Status::Ok);

    for file in ["t-good/fig.svg", "t-good/fig.csv", "t-good/tab.csv"] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
    let index = read(&out.path().join("index.md"));
    assert!(index.contains("**FAILED**"));
    assert!(index.contains("boom: solver diverged"));
    assert!(index.contains("panicked: scripted panic"));
    assert!(index.contains("SKIPPED"));
    assert!(index.contains("DPGLM_DATA"));
    assert!(index.contains("share the id"));
    assert!(index.contains("![Good figure](t-good/fig.svg)"));
    assert!(index.contains("[fig.csv](t-good/fig.csv)"));
    assert!(index.contains("a note for the reader"));
    assert!(
        index.contains("| answer | 42.00 |"),
        "table not inlined:\n{index}"
    );
}

#[test]
fn run_context_for_a_single_experiment() {
    let out = TempDir::new().expect("create temp dir");
    let mut ctx = RunContext::new(Mode::Full, out.path(), None);
    assert_eq!(ctx.mode(), Mode::Full);
    assert!(matches!(ctx.require_data(), Err(Error::DataUnavailable(_))));
    let artifacts = Scripted::Good.run(&mut ctx).expect("runs");
    assert_eq!(ctx.progress().done(), 1);
    assert_eq!(artifacts.len(), 2);
}

fn dp_repro(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dp-repro"))
        .args(args)
        .env("CI", "true")
        .output()
        .expect("run dp-repro")
}

#[test]
fn binary_rejects_bad_flags_with_exit_code_2() {
    let out = dp_repro(&["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument `--bogus`"));

    let out = dp_repro(&["--out"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out needs a value"));
}

#[test]
fn binary_unknown_only_id_exits_2_and_lists_ids() {
    let dir = TempDir::new().expect("create temp dir");
    let out = dp_repro(&["--only", "nope", "--out", &dir.path().to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown experiment `nope`"), "{stderr}");
    assert!(stderr.contains("001-fig3-rdp-curves"), "{stderr}");
}

#[test]
fn binary_lists_and_runs() {
    let out = dp_repro(&["--list"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for exp in registry() {
        assert!(
            stdout.contains(exp.id()) && stdout.contains(exp.paper()),
            "{stdout}"
        );
    }

    let dir = TempDir::new().expect("create temp dir");
    let out = dp_repro(&[
        "--only",
        "001-fig3-rdp-curves",
        "--out",
        &dir.path().to_string_lossy(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svgs = std::fs::read_dir(dir.path().join("001-fig3-rdp-curves"))
        .expect("experiment dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(svgs > 0, "no SVG written");
    assert!(dir.path().join("index.md").is_file());
}
