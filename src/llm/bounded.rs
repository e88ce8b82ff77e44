//! The bound on one turn's output, for every backend.
//!
//! [`Bounded`] wraps any [`Backend`]: each child's turn is counted as it streams, and once it
//! passes [`MAX_TURN_BYTES`] the turn is stopped (through a cancel token of its own, so the
//! backend stops between pieces as it does on a cancel) and ends as a failed turn with an
//! error naming the bound. Nothing past the bound reaches the engine, the events or the
//! transcript, so memory and the run log stay bounded whatever a model or a script emits.

use tokio_util::sync::CancellationToken;

use super::{Backend, BackendError, BackendInfo, Child, Generation, Output, Request};

/// The most text one turn may carry, in bytes (1 MiB): far above a useful turn (the default
/// cap is 1024 tokens, a few KiB; a whole source file written through `write_file` fits) and
/// above what the script backend's context window holds, far below what would strain memory
/// or the run log.
pub const MAX_TURN_BYTES: usize = 1 << 20;

/// A backend whose turns are cut at `limit` bytes.
pub struct Bounded {
    inner: Box<dyn Backend>,
    limit: usize,
}

impl Bounded {
    pub fn new(inner: Box<dyn Backend>, limit: usize) -> Self {
        Self { inner, limit }
    }
}

impl Backend for Bounded {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }

    fn new_child(&mut self, round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
        let limit = self.limit;
        let inner = self.inner.new_child(round)?;
        Ok(Box::new(BoundedChild { inner, limit }))
    }
}

/// `1 MiB`, `256 KiB`, `100 bytes`.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

struct BoundedChild<'a> {
    inner: Box<dyn Child + 'a>,
    limit: usize,
}

impl Child for BoundedChild<'_> {
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        self.inner.count_prompt_tokens(request)
    }

    fn prepare(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        self.inner.prepare(request)
    }

    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        let turn = cancel.child_token();
        let mut seen = 0usize;
        let mut over = false;
        let limit = self.limit;
        let generation = self.inner.generate_streaming(
            request,
            &mut |out| {
                let Output::Text(piece) = out else {
                    on_output(out);
                    return;
                };
                if over {
                    return;
                }
                seen = seen.saturating_add(piece.len());
                if seen > limit {
                    over = true;
                    turn.cancel();
                    return;
                }
                on_output(out);
            },
            &turn,
        )?;
        if over && !cancel.is_cancelled() {
            return Err(BackendError::ChildFailed(format!(
                "the turn passed {}, the bound on one turn's output, and was cut there",
                size(limit)
            )));
        }
        Ok(generation)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::llm::script::ScriptBackend;

    fn turn(limit: usize, text: &str) -> (Result<Generation, BackendError>, String) {
        let script = format!(
            r#"{{"rounds": [{{"turns": [{}]}}]}}"#,
            serde_json::json!(text)
        );
        let inner = ScriptBackend::parse(Path::new("s.json"), &script).unwrap();
        let mut backend = Bounded::new(Box::new(inner), limit);
        let mut child = backend.new_child(1).unwrap();
        let mut streamed = String::new();
        let request = Request::new(&[], &[]);
        let result = child.generate(
            request,
            &mut |piece| streamed.push_str(piece),
            &CancellationToken::new(),
        );
        (result, streamed)
    }

    #[test]
    fn a_turn_past_the_bound_is_cut_and_fails() {
        let (result, streamed) = turn(64, &"word ".repeat(100));
        let err = result.unwrap_err().to_string();
        assert!(err.contains("64 bytes") && err.contains("cut"), "{err}");
        assert!(streamed.len() <= 64, "{}", streamed.len());
    }

    #[test]
    fn a_turn_within_the_bound_is_untouched() {
        let (result, streamed) = turn(64, "word word");
        assert_eq!(result.unwrap().text, "word word");
        assert_eq!(streamed, "word word");
        assert_eq!(size(1 << 20), "1 MiB");
        assert_eq!(size(256 * 1024), "256 KiB");
    }

    /// A backend whose children count and prepare with fixed answers.
    struct Fixed;

    impl Backend for Fixed {
        fn info(&self) -> BackendInfo {
            BackendInfo {
                name: "fixed".into(),
                model: None,
                device: "none".into(),
                ctx_size: 64,
                max_tokens: 16,
                chat_format: "hermes".into(),
                native_tools: false,
            }
        }

        fn new_child(&mut self, _round: u32) -> Result<Box<dyn Child + '_>, BackendError> {
            Ok(Box::new(FixedChild))
        }
    }

    struct FixedChild;

    impl Child for FixedChild {
        fn count_prompt_tokens(&mut self, _request: Request<'_>) -> Result<u32, BackendError> {
            Ok(11)
        }

        fn prepare(&mut self, _request: Request<'_>) -> Result<u32, BackendError> {
            Ok(7)
        }

        fn generate_streaming(
            &mut self,
            _request: Request<'_>,
            _on_output: &mut dyn FnMut(Output<'_>),
            _cancel: &CancellationToken,
        ) -> Result<Generation, BackendError> {
            Err(BackendError::ChildFailed("unused".into()))
        }
    }

    #[test]
    fn the_bound_forwards_counting_and_preparing() {
        let mut backend = Bounded::new(Box::new(Fixed), 64);
        assert_eq!(backend.info(), Fixed.info());
        let mut child = backend.new_child(1).unwrap();
        let request = Request {
            messages: &[],
            tools: &[],
            report_only: false,
            max_tokens: None,
        };
        assert_eq!(child.count_prompt_tokens(request).unwrap(), 11);
        assert_eq!(child.prepare(request).unwrap(), 7);
    }
}
