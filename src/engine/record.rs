//! Where a run's record goes: each event to the run log first and then to the consumer,
//! transcript lines to the current round's transcript, and `run.json` at the start and end.
//! A write that fails is logged and the run goes on; the consumer still hears every event.

use serde_json::{json, Value};

use super::runlog::RunLog;
use super::{Engine, EventSink};
use crate::protocol::event::{Event, RunStatus, Stamped};
use crate::protocol::message::Message;

/// Where events and transcript lines go: the run log first, then the consumer.
pub(super) struct Recorder {
    pub(super) log: RunLog,
    sink: EventSink,
}

impl Recorder {
    pub(super) fn new(log: RunLog, sink: EventSink) -> Self {
        Self { log, sink }
    }

    pub(super) fn emit(&mut self, event: Event) {
        let ts = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let stamped = Stamped::new(ts, event);
        if let Err(e) = self.log.append_event(&stamped.to_line()) {
            tracing::error!("run log: {e}");
        }
        (self.sink)(&stamped);
    }

    pub(super) fn transcript(&mut self, message: &Message) {
        let value = serde_json::to_value(message).unwrap_or(Value::Null);
        if let Err(e) = self.log.append_transcript(&value) {
            tracing::error!("transcript: {e}");
        }
    }
}

impl Engine<'_> {
    /// Writes `run.json`: `status` is `None` while the run is going.
    pub(super) fn write_run_json(&self, status: Option<RunStatus>, rounds: u32, started: &str) {
        let mut value = json!({
            "run_id": self.config.run_id,
            "objective": self.config.objective,
            "max_rounds": self.config.max_rounds,
            "workspace": self.workspace.root().display().to_string(),
            "started_at": started,
            "finished_at": status.map(|_| chrono::Utc::now().to_rfc3339()),
            "status": status.map(RunStatus::as_str),
            "rounds_started": rounds,
            // Only a worker's report (complete or blocked) ends a run as reported.
            "worker_reported": status.is_some_and(RunStatus::is_worker_report),
            "head": super::run_info::head_commit(self.workspace.repo()),
        });
        let info = serde_json::to_value(&self.config.run_info).unwrap_or(Value::Null);
        if let (Value::Object(map), Value::Object(extra)) = (&mut value, info) {
            map.extend(extra);
        }
        if let Err(e) = self.rec.log.write_run_json(&value) {
            tracing::error!("run.json: {e}");
        }
    }
}
