//! Parquet input (columns by name through the schema, typed errors) and row blocks (every
//! format streamed in blocks adds up, bitwise, to the whole-file read). The Parquet files are
//! written by the tests themselves (dp_data::write_parquet, or the parquet crate's writer for
//! the layouts it cannot write: nulls, decimals, binary and nested columns).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;
use std::sync::Arc;

use dp_data::{
    Error, Format, LoadedData, ParquetColumn, ParseErrorKind, RowBlocks, Schema, TableSpec, Task,
    open_blocks, read_blocks, read_dataset, read_parquet_bytes, read_scoring_data,
    read_training_data, write_parquet,
};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use tempfile::TempDir;

fn write(path: &Path, columns: &[(&str, ParquetColumn)], group: usize) {
    let file = std::fs::File::create(path).unwrap();
    write_parquet(file, path, columns, group).unwrap();
}

fn text(v: &[&str]) -> ParquetColumn {
    ParquetColumn::Text(v.iter().map(|s| (*s).to_owned()).collect())
}

/// Seven rows: numbers, an integer, a flag, a categorical column, an identifier and a string
/// label — as Parquet columns and as the equivalent CSV.
fn table() -> Vec<(&'static str, ParquetColumn)> {
    vec![
        ("id", text(&["a", "b", "c", "d", "e", "f", "g"])),
        (
            "x1",
            ParquetColumn::Double(vec![0.5, -1.25, 3.0, 1e-3, 7.5, -0.1, 2.0]),
        ),
        ("n", ParquetColumn::Int64(vec![3, -4, 0, 9, 12, 1, -7])),
        (
            "flag",
            ParquetColumn::Bool(vec![true, false, false, true, true, false, true]),
        ),
        (
            "color",
            text(&["red", "blue", "green", "red", "pink", "blue", "green"]),
        ),
        ("y", text(&["yes", "no", "no", "yes", "yes", "no", "yes"])),
    ]
}

const TABLE_CSV: &str = "id,x1,n,flag,color,y\n\
                         a,0.5,3,1,red,yes\n\
                         b,-1.25,-4,0,blue,no\n\
                         c,3.0,0,0,green,no\n\
                         d,1e-3,9,1,red,yes\n\
                         e,7.5,12,1,pink,yes\n\
                         f,-0.1,1,0,blue,no\n\
                         g,2.0,-7,1,green,yes\n";

fn schema() -> Schema {
    Schema::from_json(
        r#"{"label": "y", "classes": ["no", "yes"], "drop": ["id"],
            "categorical": {"color": ["red", "green", "blue", "*"]}}"#,
        "test",
    )
    .unwrap()
}

/// A Parquet file reads exactly as the same table in CSV: features chosen and one-hot
/// encoded by name, booleans as 1/0, string labels mapped by the class pair.
#[test]
fn parquet_reads_as_the_same_csv() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let pq = d.join("t.parquet");
    write(&pq, &table(), 3);
    let csv = d.join("t.csv");
    std::fs::write(&csv, TABLE_CSV).unwrap();
    let (a, spec_a) = read_training_data(&pq, None, &schema(), Task::Classification).unwrap();
    let (b, spec_b) = read_training_data(&csv, None, &schema(), Task::Classification).unwrap();
    assert_eq!(a, b);
    assert_eq!(spec_a, spec_b);
    assert_eq!(a.x.shape(), [7, 7]);
    assert_eq!(a.x.row(4).to_vec(), [7.5, 12.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(a.y.to_vec(), [1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0]);
    assert_eq!(
        a.feature_names.as_deref().unwrap()[2..],
        ["flag", "color=red", "color=green", "color=blue", "color=*"]
    );

    // Scoring data: columns matched by name in any order, the label not needed.
    let mut shuffled = table();
    shuffled.reverse();
    shuffled.retain(|(n, _)| *n != "y");
    let scored = d.join("s.pq");
    write(&scored, &shuffled, 2);
    let s = read_scoring_data(&scored, None, &spec_a, 7, false).unwrap();
    assert_eq!(s.x, a.x);
    assert!(s.y.is_empty());
    // With labels, read_dataset's plain path: every other column numeric.
    match read_dataset(&pq, None, Some("y")) {
        Err(Error::Parquet { reason, .. }) => assert!(reason.contains("`id` holds strings")),
        other => panic!("{other:?}"),
    }
}

/// `.parquet` / `.pq` by name, and the `PAR1` magic for a file without an extension.
#[test]
fn format_by_extension_and_magic() {
    assert_eq!(Format::from_path(Path::new("a.PQ")), Some(Format::Parquet));
    assert_eq!("parquet".parse::<Format>().unwrap(), Format::Parquet);
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let bare = d.join("data");
    write(&bare, &[("v", ParquetColumn::Double(vec![1.0, 2.0]))], 10);
    assert_eq!(Format::infer(&bare, None).unwrap(), Format::Parquet);
    let data = read_dataset(&bare, None, Some("v"));
    // The label is the only column: no features, and labels read.
    assert_eq!(data.unwrap().y.to_vec(), [1.0, 2.0]);
    let other = d.join("notes");
    std::fs::write(&other, "PAR").unwrap();
    assert!(matches!(
        Format::infer(&other, None),
        Err(Error::FormatNotInferred { .. })
    ));
}

/// Labels of each type: integers {0, 1} and booleans as signs, booleans by a class pair
/// `false,true`, and a value outside the pair an error naming its row and column.
#[test]
fn labels_of_each_type() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let path = d.join("l.parquet");
    write(
        &path,
        &[
            ("x", ParquetColumn::Double(vec![1.0, 2.0, 3.0])),
            ("i", ParquetColumn::Int64(vec![1, 0, 1])),
            ("b", ParquetColumn::Bool(vec![false, true, true])),
            ("s", text(&["p", "q", "r"])),
        ],
        2,
    );
    let read = |json: &str| {
        read_training_data(
            &path,
            None,
            &Schema::from_json(json, "t").unwrap(),
            Task::Classification,
        )
    };
    let y = |json: &str| read(json).unwrap().0.y.to_vec();
    assert_eq!(y(r#"{"label": "i", "features": ["x"]}"#), [1.0, -1.0, 1.0]);
    assert_eq!(y(r#"{"label": "b", "features": ["x"]}"#), [-1.0, 1.0, 1.0]);
    assert_eq!(
        y(r#"{"label": "b", "features": ["x"], "classes": ["true", "false"]}"#),
        [1.0, -1.0, -1.0]
    );
    match read(r#"{"label": "s", "features": ["x"], "classes": ["p", "q"]}"#) {
        Err(Error::Value {
            row_group: 1,
            row: 2,
            column,
            kind: ParseErrorKind::UnexpectedValue { value, .. },
            ..
        }) => assert_eq!((column.as_str(), value.as_str()), ("s", "r")),
        other => panic!("{other:?}"),
    }
}

/// Writes one row group with the given fields and values written by `fill`.
fn write_raw(
    path: &Path,
    fields: Vec<Type>,
    fill: impl FnOnce(&mut parquet::file::writer::SerializedRowGroupWriter<'_, std::fs::File>),
) {
    let schema = Type::group_type_builder("t")
        .with_fields(fields.into_iter().map(Arc::new).collect())
        .build()
        .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let props = Arc::new(WriterProperties::builder().build());
    let mut w = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
    let mut g = w.next_row_group().unwrap();
    fill(&mut g);
    g.close().unwrap();
    w.close().unwrap();
}

fn field(
    name: &str,
    physical: Physical,
    rep: Repetition,
) -> parquet::schema::types::PrimitiveTypeBuilder<'_> {
    Type::primitive_type_builder(name, physical).with_repetition(rep)
}

/// Nulls, decimals, binary and nested columns, large integers, NaN.
#[test]
fn nulls_decimals_and_unsupported_types() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let path = d.join("raw.parquet");
    write_raw(
        &path,
        vec![
            field("y", Physical::DOUBLE, Repetition::REQUIRED)
                .build()
                .unwrap(),
            field("opt", Physical::DOUBLE, Repetition::OPTIONAL)
                .build()
                .unwrap(),
            field("price", Physical::INT64, Repetition::REQUIRED)
                .with_logical_type(Some(LogicalType::Decimal {
                    scale: 2,
                    precision: 10,
                }))
                .with_precision(10)
                .with_scale(2)
                .build()
                .unwrap(),
            field("blob", Physical::BYTE_ARRAY, Repetition::REQUIRED)
                .build()
                .unwrap(),
            Type::group_type_builder("nested")
                .with_repetition(Repetition::REQUIRED)
                .with_fields(vec![Arc::new(
                    field("inner", Physical::DOUBLE, Repetition::REQUIRED)
                        .build()
                        .unwrap(),
                )])
                .build()
                .unwrap(),
            field("big", Physical::INT64, Repetition::REQUIRED)
                .build()
                .unwrap(),
        ],
        |g| {
            let mut c = g.next_column().unwrap().unwrap();
            c.typed::<DoubleType>()
                .write_batch(&[1.0, 2.0, f64::NAN], None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = g.next_column().unwrap().unwrap();
            c.typed::<DoubleType>()
                .write_batch(&[0.5, 1.5], Some(&[1, 0, 1]), None)
                .unwrap();
            c.close().unwrap();
            let mut c = g.next_column().unwrap().unwrap();
            c.typed::<Int64Type>()
                .write_batch(&[12345, -50, 7], None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = g.next_column().unwrap().unwrap();
            let blobs: Vec<ByteArray> = vec!["\u{0}".into(), "b".into(), "c".into()];
            c.typed::<ByteArrayType>()
                .write_batch(&blobs, None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = g.next_column().unwrap().unwrap();
            c.typed::<DoubleType>()
                .write_batch(&[1.0, 2.0, 3.0], None, None)
                .unwrap();
            c.close().unwrap();
            let mut c = g.next_column().unwrap().unwrap();
            c.typed::<Int64Type>()
                .write_batch(&[1, (1 << 53) + 1, 3], None, None)
                .unwrap();
            c.close().unwrap();
        },
    );
    let read = |json: &str| {
        read_training_data(
            &path,
            None,
            &Schema::from_json(json, "t").unwrap(),
            Task::Regression,
        )
    };
    // Decimal as the unscaled value / 10^scale; NaN label refused at its row.
    match read(r#"{"label": "y", "features": ["price"]}"#) {
        Err(Error::Value {
            row: 2,
            column,
            kind: ParseErrorKind::NonFinite(_),
            ..
        }) => assert_eq!(column, "y"),
        other => panic!("{other:?}"),
    }
    let bytes = std::fs::read(&path).unwrap();
    let spec = TableSpec {
        label: Some("big".into()),
        labels: dp_data::Labels::Numeric,
        columns: Some(vec![dp_data::Column::numeric("price")]),
    };
    match read_parquet_bytes(&bytes, "raw.parquet", &spec) {
        Err(Error::Value {
            row: 1,
            kind: ParseErrorKind::UnexpectedValue { value, .. },
            ..
        }) => assert_eq!(value, "9007199254740993"),
        other => panic!("{other:?}"),
    }
    let spec = TableSpec {
        label: Some("price".into()),
        ..spec
    };
    let ok = read_parquet_bytes(&bytes, "raw.parquet", &spec).unwrap();
    assert_eq!(ok.y.to_vec(), [123.45, -0.5, 0.07]);
    // A null: row group, row and column named.
    match read(r#"{"label": "price", "features": ["opt"]}"#) {
        Err(Error::Value {
            row_group: 0,
            row: 1,
            column,
            kind: ParseErrorKind::Null,
            ..
        }) => assert_eq!(column, "opt"),
        other => panic!("{other:?}"),
    }
    // Binary and nested columns: refused by name when read, fine when dropped.
    for (col, what) in [("blob", "binary"), ("nested", "nested group")] {
        match read(&format!(r#"{{"label": "price", "features": ["{col}"]}}"#)) {
            Err(Error::Parquet { reason, .. }) => {
                assert!(reason.contains(col) && reason.contains(what), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Corrupt and truncated files are typed errors.
#[test]
fn corrupt_files_are_typed_errors() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let good = d.join("g.parquet");
    write(&good, &table(), 3);
    let bytes = std::fs::read(&good).unwrap();
    for (name, bad) in [
        ("trunc.parquet", &bytes[..bytes.len() / 2]),
        ("head.parquet", &bytes[..3]),
        ("text.parquet", &b"x,y\n1,2\n"[..]),
    ] {
        let p = d.join(name);
        std::fs::write(&p, bad).unwrap();
        assert!(
            matches!(
                read_training_data(&p, None, &schema(), Task::Classification),
                Err(Error::Parquet { .. })
            ),
            "{name}"
        );
    }
}

/// Stacks blocks, checking that none exceeds `max` rows.
fn stack(blocks: RowBlocks<'_>, max: usize) -> LoadedData {
    let mut sizes = Vec::new();
    let names = blocks.feature_names().map(<[String]>::to_vec);
    let d = blocks.n_features();
    let mut x = Vec::new();
    let mut y = Vec::new();
    for b in blocks {
        let b = b.unwrap();
        sizes.push(b.x.nrows());
        assert_eq!(b.x.ncols(), d);
        x.extend(b.x.iter().copied());
        y.extend(b.y.iter().copied());
    }
    assert!(sizes.iter().all(|&s| (1..=max).contains(&s)), "{sizes:?}");
    let n = sizes.iter().sum();
    LoadedData {
        x: ndarray::Array2::from_shape_vec((n, d), x).unwrap(),
        y: ndarray::Array1::from_vec(y),
        feature_names: names,
    }
}

/// A version 1.0 `<f8` NPY file's bytes.
fn npy(shape: &str, values: &[f64]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(dict.len()).unwrap().to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

/// Every format streamed in blocks equals its whole-file read, bitwise (`==` on f64 and the
/// same bits: no value is rounded differently), for several block sizes.
#[test]
fn blocks_add_up_to_the_whole_file_in_every_format() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let pq = d.join("t.parquet");
    write(&pq, &table(), 3);
    let csv = d.join("t.csv");
    std::fs::write(&csv, TABLE_CSV).unwrap();
    let svm = d.join("t.libsvm");
    std::fs::write(
        &svm,
        "1 1:0.5 3:2\n0 2:1e-3 # c\n\n1 1:1 2:2 4:3\n0\n1 4:0.25\n",
    )
    .unwrap();
    let x: Vec<f64> = (0..21).map(|i| f64::from(i) * 0.37 - 2.0).collect();
    std::fs::write(d.join("m_X.npy"), npy("(7, 3)", &x)).unwrap();
    std::fs::write(
        d.join("m_y.npy"),
        npy("(7,)", &[1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]),
    )
    .unwrap();
    let col = d.join("c.npy");
    let with_label: Vec<f64> = x
        .chunks(3)
        .zip([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0])
        .flat_map(|(r, l)| [r[0], l, r[1], r[2]])
        .collect();
    std::fs::write(&col, npy("(7, 4)", &with_label)).unwrap();

    let classes = schema();
    let signs = Schema::default();
    let svm_width = Schema {
        n_features: Some(4),
        ..Schema::default()
    };
    let column = Schema::from_json(r#"{"label": "1"}"#, "t").unwrap();
    let cases: [(&Path, &Schema); 5] = [
        (&pq, &classes),
        (&csv, &classes),
        (&svm, &svm_width),
        (&d.join("m_X.npy"), &signs),
        (&col, &column),
    ];
    for (path, schema) in cases {
        let (whole, spec) = read_training_data(path, None, schema, Task::Classification).unwrap();
        for b in [1, 2, 3, 7, 1000] {
            let (blocks, spec_b) =
                open_blocks(path, None, schema, Task::Classification, b).unwrap();
            assert_eq!(spec_b, spec, "{}", path.display());
            let streamed = stack(blocks, b);
            assert_eq!(streamed, whole, "{} in blocks of {b}", path.display());
            let bits = |a: &LoadedData| {
                a.x.iter()
                    .chain(&a.y)
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&streamed), bits(&whole));
            // A second pass with the stored spec, as scoring data with labels.
            let again = read_blocks(path, None, &spec, Some(whole.n_features()), true, b).unwrap();
            assert_eq!(stack(again, b), whole, "{} (second pass)", path.display());
        }
        // In memory, the same interface.
        assert_eq!(stack(whole.blocks(2), 2), whole);
    }
}

/// Memory stays bounded: a file of 40 row groups read in blocks far smaller than it never
/// yields more than the block size, blocks end at row-group boundaries, and every row comes
/// once, in order.
#[test]
fn many_row_groups_stream_in_small_blocks() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let path = d.join("big.parquet");
    let n = 2000;
    let v: Vec<f64> = (0..n).map(f64::from).collect();
    write(
        &path,
        &[
            ("a", ParquetColumn::Double(v.clone())),
            ("b", ParquetColumn::Double(v.iter().map(|x| -x).collect())),
            (
                "y",
                ParquetColumn::Int64((0..i64::from(n)).map(|i| i % 2).collect()),
            ),
        ],
        50,
    );
    let s = Schema::from_json(r#"{"label": "y"}"#, "t").unwrap();
    let (blocks, _) = open_blocks(&path, None, &s, Task::Classification, 7).unwrap();
    let mut sizes = Vec::new();
    let mut next = 0.0;
    for b in blocks {
        let b = b.unwrap();
        sizes.push(b.x.nrows());
        for row in b.x.rows() {
            assert_eq!(row.to_vec(), [next, -next]);
            next += 1.0;
        }
    }
    // Blocks run across the 40 groups of 50 rows: 285 of 7, then the last 5.
    assert_eq!(sizes.len(), 286);
    assert!(sizes[..285].iter().all(|&s| s == 7));
    assert_eq!(sizes[285], 5);
    assert_eq!(sizes.iter().sum::<usize>(), 2000);
    assert_eq!(next, 2000.0);
}

/// An NPY file of more values than the reader takes per read call (3,001 × 25 = 75,025, read
/// straight into the block in pieces of 2^15 values and checked piece by piece), plain and
/// gzip, with a label file or a label column: its blocks, new or read into one kept block,
/// equal the whole-file read bitwise, for blocks that do and do not line up with the pieces;
/// a NaN in a later piece is reported at its row and column.
#[test]
fn npy_blocks_of_many_read_pieces_add_up_and_locate_a_nan() {
    let tmp = TempDir::new().unwrap();
    let d = tmp.path();
    let (n, cols) = (3001, 25);
    // Column 4 holds ±1 (the label column of one case).
    let x: Vec<f64> = (0..n * cols)
        .map(|i| match i % cols {
            4 => f64::from(u8::from(i % 3 == 0)) * 2.0 - 1.0,
            _ => (i as f64 * 0.731).sin() * 10f64.powi(i as i32 % 7 - 3),
        })
        .collect();
    let y: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let shape = format!("({n}, {cols})");
    let gz = |bytes: &[u8]| {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    };
    std::fs::write(d.join("big_X.npy"), npy(&shape, &x)).unwrap();
    std::fs::write(d.join("big_y.npy"), npy(&format!("({n},)"), &y)).unwrap();
    std::fs::write(d.join("big_X.npy.gz"), gz(&npy(&shape, &x))).unwrap();
    std::fs::write(d.join("big_y.npy.gz"), gz(&npy(&format!("({n},)"), &y))).unwrap();
    let column = Schema::from_json(r#"{"label": "4"}"#, "t").unwrap();
    let cases = [
        ("big_X.npy", Schema::default(), cols),
        ("big_X.npy.gz", Schema::default(), cols),
        ("big_X.npy", column, cols - 1),
    ];
    for (name, schema, width) in &cases {
        let path = d.join(name);
        let (whole, _) = read_training_data(&path, None, schema, Task::Classification).unwrap();
        assert_eq!(whole.x.dim(), (n, *width));
        for b in [1000, 1311, 5000] {
            let (blocks, _) = open_blocks(&path, None, schema, Task::Classification, b).unwrap();
            let streamed = stack(blocks, b);
            let bits = |a: &LoadedData| {
                a.x.iter()
                    .chain(&a.y)
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&streamed), bits(&whole), "{name} in blocks of {b}");
            // Into one kept block, over two passes (the reader writes over what the block
            // held, a last short block and then a full one included).
            let mut kept = dp_data::RowBlock::default();
            for pass in 0..2 {
                let (mut blocks, _) =
                    open_blocks(&path, None, schema, Task::Classification, b).unwrap();
                let (mut x, mut y) = (Vec::new(), Vec::new());
                while blocks.read_into(&mut kept).unwrap() {
                    assert!(kept.x.nrows() <= b && kept.x.ncols() == *width);
                    x.extend(kept.x.iter().map(|v| v.to_bits()));
                    y.extend(kept.y.iter().map(|v| v.to_bits()));
                }
                x.extend(y);
                assert_eq!(x, bits(&whole), "{name}, kept block of {b}, pass {pass}");
            }
        }
    }
    let mut nan = x.clone();
    nan[2500 * cols + 7] = f64::NAN;
    std::fs::write(d.join("big_X.npy"), npy(&shape, &nan)).unwrap();
    for b in [1000, 5000] {
        let (blocks, _) = open_blocks(
            &d.join("big_X.npy"),
            None,
            &Schema::default(),
            Task::Classification,
            b,
        )
        .unwrap();
        let e = blocks
            .map(|b| b.map(|_| ()))
            .collect::<Result<Vec<_>, _>>()
            .unwrap_err();
        assert!(
            e.to_string().contains("row 2500, column 7"),
            "blocks of {b}: {e}"
        );
    }
}
