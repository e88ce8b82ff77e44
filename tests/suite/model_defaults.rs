//! Defaults read from the model: the GGUF header is read (past the tokenizer's long arrays),
//! the context defaults to the trained one, at most 16,384 and what free memory holds,
//! sampling comes from `general.sampling.*` or the coding defaults, only where nobody set a
//! value, and `run.json` says where each value came from. The models here are synthetic GGUF
//! headers written by the tests; no test depends on this machine's memory.

use std::path::Path;

use ralph_tui::config::{Dirs, Settings, Source};
use ralph_tui::model_defaults::{self as defaults, ContextChoice};
use ralph_tui::model_file::{MetaValue, ModelMeta};
use serde_json::Value;

use super::common::*;

/// A GGUF value to write.
enum Put {
    U32(u32),
    I32(i32),
    F32(f32),
    Str(&'static str),
    Strs(Vec<String>),
    Ints(Vec<i32>),
}

/// A GGUF v3 file with `pairs` as metadata and no tensors, padded past the size check.
fn gguf(pairs: &[(&str, Put)]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend((pairs.len() as u64).to_le_bytes());
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    };
    for (key, value) in pairs {
        string(&mut out, key);
        match value {
            Put::U32(n) => {
                out.extend(4u32.to_le_bytes());
                out.extend(n.to_le_bytes());
            }
            Put::I32(n) => {
                out.extend(5u32.to_le_bytes());
                out.extend(n.to_le_bytes());
            }
            Put::F32(x) => {
                out.extend(6u32.to_le_bytes());
                out.extend(x.to_le_bytes());
            }
            Put::Str(s) => {
                out.extend(8u32.to_le_bytes());
                string(&mut out, s);
            }
            Put::Strs(items) => {
                out.extend(9u32.to_le_bytes());
                out.extend(8u32.to_le_bytes());
                out.extend((items.len() as u64).to_le_bytes());
                for item in items {
                    string(&mut out, item);
                }
            }
            Put::Ints(items) => {
                out.extend(9u32.to_le_bytes());
                out.extend(5u32.to_le_bytes());
                out.extend((items.len() as u64).to_le_bytes());
                for n in items {
                    out.extend(n.to_le_bytes());
                }
            }
        }
    }
    out.resize(out.len() + 2048, 0);
    out
}

/// A small llama-architecture model: 2 layers, 4 heads of 16, 2 KV heads; trained on
/// `context` tokens; `sampling` as its `general.sampling.*` keys.
fn tiny_model(context: u32, sampling: Vec<(&'static str, Put)>) -> Vec<u8> {
    let mut pairs = vec![
        ("general.architecture", Put::Str("llama")),
        ("general.name", Put::Str("tiny")),
        ("llama.block_count", Put::U32(2)),
        ("llama.context_length", Put::U32(context)),
        ("llama.embedding_length", Put::U32(64)),
        ("llama.attention.head_count", Put::U32(4)),
        ("llama.attention.head_count_kv", Put::U32(2)),
        (
            "tokenizer.ggml.tokens",
            Put::Strs((0..5000).map(|i| format!("tok{i}")).collect()),
        ),
        ("tokenizer.chat_template", Put::Str("{{ messages }}")),
    ];
    pairs.extend(sampling);
    gguf(&pairs)
}

fn meta(bytes: &[u8]) -> ModelMeta {
    ModelMeta::parse(std::io::Cursor::new(bytes)).unwrap()
}

#[test]
fn the_header_is_read_past_the_tokenizer_arrays() {
    let meta = meta(&tiny_model(
        2048,
        vec![("general.sampling.temp", Put::F32(0.6))],
    ));
    assert_eq!(meta.architecture(), Some("llama"));
    assert_eq!(meta.trained_context(), Some(2048));
    assert_eq!(meta.str("tokenizer.chat_template"), Some("{{ messages }}"));
    assert_eq!(
        meta.get("tokenizer.ggml.tokens"),
        None,
        "long arrays are skipped"
    );
    assert_eq!(meta.float("general.sampling.temp"), Some(f64::from(0.6f32)));
    // 2 layers x 2 KV heads x (16 + 16) per head x 2 bytes.
    assert_eq!(meta.kv_bytes_per_token(2), Some(256));
    // A KV head count per layer is read as a list, and summed.
    let per_layer = ModelMeta::parse(std::io::Cursor::new(gguf(&[
        ("general.architecture", Put::Str("llama")),
        ("llama.block_count", Put::U32(2)),
        ("llama.embedding_length", Put::U32(64)),
        ("llama.attention.head_count", Put::U32(4)),
        ("llama.attention.head_count_kv", Put::Ints(vec![1, 3])),
    ])))
    .unwrap();
    assert_eq!(per_layer.kv_bytes_per_token(2), Some(4 * 32 * 2));
}

#[test]
fn a_truncated_or_foreign_header_is_an_error() {
    let whole = tiny_model(2048, vec![]);
    let cut = &whole[..200];
    assert!(ModelMeta::parse(std::io::Cursor::new(cut)).is_err());
    assert!(ModelMeta::parse(std::io::Cursor::new(b"GGML0000".to_vec())).is_err());
}

#[test]
fn kv_bytes_per_token_follow_the_models_dimensions() {
    let dims = |arch: &str, pairs: &[(&str, i64)]| {
        let mut all = vec![(
            "general.architecture".to_string(),
            MetaValue::Str(arch.into()),
        )];
        all.extend(
            pairs
                .iter()
                .map(|(k, v)| (format!("{arch}.{k}"), MetaValue::Int(*v))),
        );
        ModelMeta::from_pairs(all)
    };
    // Qwen2.5-Coder-1.5B: 28 layers, 2 KV heads of 1536 / 12 = 128.
    let qwen = dims(
        "qwen2",
        &[
            ("block_count", 28),
            ("embedding_length", 1536),
            ("attention.head_count", 12),
            ("attention.head_count_kv", 2),
        ],
    );
    assert_eq!(qwen.kv_bytes_per_token(2), Some(28 * 2 * 256 * 2));
    // Explicit key and value lengths win over embedding / heads.
    let explicit = dims(
        "gemma",
        &[
            ("block_count", 2),
            ("embedding_length", 1000),
            ("attention.head_count", 8),
            ("attention.head_count_kv", 1),
            ("attention.key_length", 256),
            ("attention.value_length", 128),
        ],
    );
    assert_eq!(explicit.kv_bytes_per_token(2), Some(2 * 384 * 2));
    // A KV head count per layer is summed over the layers.
    let per_layer = ModelMeta::from_pairs([
        ("general.architecture", MetaValue::Str("openelm".into())),
        ("openelm.block_count", MetaValue::Int(3)),
        ("openelm.embedding_length", MetaValue::Int(64)),
        ("openelm.attention.head_count", MetaValue::Int(4)),
        (
            "openelm.attention.head_count_kv",
            MetaValue::Ints(vec![1, 2, 3]),
        ),
    ]);
    assert_eq!(per_layer.kv_bytes_per_token(2), Some(6 * 32 * 2));
    assert_eq!(
        dims("llama", &[("block_count", 2)]).kv_bytes_per_token(2),
        None
    );
}

#[test]
fn the_default_context_is_the_trained_one_at_most_16384() {
    let plenty = Some(u64::MAX / 2);
    let choice = |trained| defaults::context_size(trained, Some(28_672), plenty);
    assert_eq!(
        choice(Some(32_768)),
        ContextChoice {
            ctx_size: 16_384,
            source: Source::Model
        }
    );
    assert_eq!(choice(Some(8192)).ctx_size, 8192);
    assert_eq!(
        choice(None),
        ContextChoice {
            ctx_size: 4096,
            source: Source::Default
        }
    );
    // Without a memory figure no cap applies.
    assert_eq!(
        defaults::context_size(Some(32_768), Some(28_672), None).ctx_size,
        16_384
    );
}

#[test]
fn free_memory_caps_the_default_context() {
    // 100 MiB of KV budget at 28 KiB a token holds 3657 tokens: 3584 in whole 256s.
    let capped = defaults::context_size(Some(32_768), Some(28_672), Some(100 << 20));
    assert_eq!(
        capped,
        ContextChoice {
            ctx_size: 3584,
            source: Source::MemoryCap
        }
    );
    // Never below the smallest context a run takes.
    let starved = defaults::context_size(Some(32_768), Some(28_672), Some(1 << 20));
    assert_eq!(starved.ctx_size, 256);
    // The budget leaves a quarter of what is available and the model's own bytes.
    assert_eq!(defaults::kv_budget(8 << 30, 1 << 30), 5 << 30);
}

#[test]
fn sampling_comes_from_the_general_sampling_keys_when_they_are_sane() {
    let meta = meta(&tiny_model(
        2048,
        vec![
            ("general.sampling.temp", Put::F32(0.7)),
            ("general.sampling.top_k", Put::I32(20)),
            ("general.sampling.top_p", Put::F32(0.8)),
            ("general.sampling.min_p", Put::F32(2.0)),
            ("general.sampling.penalty_repeat", Put::F32(1.05)),
        ],
    ));
    let hints = defaults::model_sampling(&meta);
    assert_eq!(hints.temperature, Some(0.7));
    assert_eq!(hints.top_k, Some(20));
    assert_eq!(hints.top_p, Some(0.8));
    assert_eq!(hints.min_p, None, "a min_p above 1 is ignored");
    assert_eq!(hints.repeat_penalty, Some(1.05));
    let none = defaults::model_sampling(&ModelMeta::default());
    assert_eq!(none, defaults::SamplingHints::default());
}

fn dirs(home: &Path) -> Dirs {
    Dirs {
        config: home.join("config"),
        data: home.join("data"),
        cache: home.join("cache"),
    }
}

fn resolve(repo: &Path, home: &Path, args: &[&str], toml: &str) -> Settings {
    use clap::Parser;
    let dirs = dirs(home);
    std::fs::create_dir_all(&dirs.config).unwrap();
    std::fs::write(dirs.config.join("config.toml"), toml).unwrap();
    let repo = repo.display().to_string();
    let all = ["ralph-tui", "-C", &repo]
        .into_iter()
        .chain(args.iter().copied())
        .chain(["objective"]);
    Settings::resolve(ralph_tui::cli::Cli::try_parse_from(all).unwrap(), dirs).unwrap()
}

#[test]
fn without_a_model_the_coding_defaults_apply_and_each_value_says_where_it_came_from() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let settings = resolve(
        repo.path(),
        home.path(),
        &["--temperature", "0.5"],
        "top_k = 7\n",
    );
    let inference = &settings.options;
    assert_eq!(inference.temperature, 0.5);
    assert_eq!(inference.top_k, 7);
    assert_eq!(
        (
            inference.ctx_size,
            inference.repeat_penalty,
            inference.top_p
        ),
        (4096, 1.0, 0.95)
    );
    let source = |key: &str| settings.sources.get(key).copied();
    assert_eq!(source("temperature"), Some(Source::CommandLine));
    assert_eq!(source("top_k"), Some(Source::ConfigFile));
    assert_eq!(source("ctx_size"), Some(Source::Default));
    assert_eq!(source("seed"), Some(Source::Default));
}

#[test]
fn the_model_fills_only_what_nobody_set() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let mut settings = resolve(
        repo.path(),
        home.path(),
        &["--temperature", "0.5"],
        "top_k = 7\n",
    );
    let meta = meta(&tiny_model(
        32_768,
        vec![
            ("general.sampling.temp", Put::F32(0.9)),
            ("general.sampling.top_k", Put::I32(20)),
            ("general.sampling.top_p", Put::F32(0.8)),
        ],
    ));
    settings.take_model_defaults(&meta, 1 << 30, Some(64 << 30));
    let inference = &settings.options;
    let source = |key: &str| settings.sources.get(key).copied();
    assert_eq!((inference.temperature, inference.top_k), (0.5, 7));
    assert_eq!(inference.top_p, 0.8);
    assert_eq!(source("top_p"), Some(Source::Model));
    assert_eq!(
        (inference.ctx_size, source("ctx_size")),
        (16_384, Some(Source::Model))
    );
    assert_eq!(inference.repeat_penalty, 1.0, "no key: the coding default");
    assert_eq!(source("repeat_penalty"), Some(Source::Default));
    assert_eq!(source("temperature"), Some(Source::CommandLine));

    // Little free memory lowers the default context; a given one stays as given.
    let mut given = resolve(repo.path(), home.path(), &["--ctx-size", "1024"], "");
    given.take_model_defaults(&meta, 1 << 30, Some(1 << 20));
    assert_eq!(given.options.ctx_size, 1024);
    assert_eq!(given.sources.get("ctx_size"), Some(&Source::CommandLine));
    // 4 MiB available: a 3 MiB KV budget at 256 bytes a token holds 12,288 tokens.
    let mut starved = resolve(repo.path(), home.path(), &[], "");
    starved.take_model_defaults(&meta, 0, Some(4 << 20));
    assert_eq!(
        (starved.options.ctx_size, starved.sources.get("ctx_size")),
        (12_288, Some(&Source::MemoryCap))
    );
}

#[test]
fn prepare_reads_the_model_files_header_for_a_llama_run() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let model = home.path().join("tiny.gguf");
    std::fs::write(
        &model,
        tiny_model(2048, vec![("general.sampling.top_k", Put::I32(11))]),
    )
    .unwrap();
    let model_arg = model.display().to_string();
    let settings = resolve(
        repo.path(),
        home.path(),
        &["--backend", "llama", "-m", &model_arg],
        "",
    );
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let inference = &prepared.settings.options;
    assert_eq!((inference.ctx_size, inference.top_k), (2048, 11));
    assert_eq!(prepared.settings.sources.get("top_k"), Some(&Source::Model));
    assert_eq!(
        settings.options.top_k, 40,
        "the settings given stay as they were"
    );
}

#[test]
fn run_json_says_where_each_value_came_from() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--top-p", "0.5", "objective"],
    );
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let text = std::fs::read_to_string(run.run_dir.join("run.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let sources = &json["settings"]["sources"];
    assert_eq!(sources["top_p"], "command_line", "{text}");
    assert_eq!(sources["ctx_size"], "default", "{text}");
    assert_eq!(sources["temperature"], "default", "{text}");
    assert_eq!(json["settings"]["inference"]["temperature"], 0.2, "{text}");
    assert_eq!(
        json["settings"]["inference"]["repeat_penalty"], 1.0,
        "{text}"
    );
}
