//! The loop's state between `tokio::select!` arms, and one method per arm: terminal input,
//! a frame due, a background task done, messages from the engine's side, the clock, a
//! signal. Each arm answers the effects the state asks for; [`Session::perform`] carries
//! them out, or says how the session ended.

use std::time::{Duration, Instant};

use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::mpsc;

use super::{draw, terminal_msg, Done, Driver, Ended, Inbound};
use crate::screens::state::{Effect, Msg, Phase, State};
use crate::terminal::frames::FrameScheduler;
use crate::terminal::notify::Notifier;

/// What the loop keeps between arms.
pub(super) struct Session<'a, B: Backend> {
    terminal: &'a mut Terminal<B>,
    state: State,
    driver: Driver,
    notifier: &'a mut Notifier,
    on_frame: &'a mut dyn FnMut(&State),
    pub(super) frames: FrameScheduler,
    started: Instant,
    /// When the state was last told the time.
    last_clock: Instant,
    /// Once the terminal's input ends (or fails), it is not polled again.
    pub(super) input_open: bool,
}

impl<'a, B: Backend> Session<'a, B> {
    pub(super) fn new(
        terminal: &'a mut Terminal<B>,
        state: State,
        driver: Driver,
        notifier: &'a mut Notifier,
        on_frame: &'a mut dyn FnMut(&State),
    ) -> Self {
        let mut frames = FrameScheduler::default();
        frames.request();
        Self {
            terminal,
            state,
            driver,
            notifier,
            on_frame,
            frames,
            started: Instant::now(),
            last_clock: Instant::now(),
            input_open: true,
        }
    }

    /// Starts the run when the objective was given (else the editor asks for it first).
    pub(super) fn start(&mut self) -> Option<Ended> {
        if self.state.phase != Phase::Running {
            return None;
        }
        let objective = self.state.objective.clone();
        self.driver
            .perform(Effect::StartRun(objective), &self.state)
    }

    /// A terminal event; its end or failure cancels the run.
    pub(super) fn input(
        &mut self,
        event: Option<std::io::Result<crossterm::event::Event>>,
    ) -> Vec<Effect> {
        match event {
            Some(Ok(event)) => {
                let effects = match terminal_msg(event, self.notifier) {
                    Some(msg) => self.state.update(msg),
                    None => Vec::new(),
                };
                self.frames.request();
                effects
            }
            Some(Err(e)) => {
                tracing::error!("terminal input: {e}; cancelling the run");
                self.input_open = false;
                self.state.update(Msg::Terminate)
            }
            None => {
                self.input_open = false;
                self.state.update(Msg::Terminate)
            }
        }
    }

    /// A frame is due: draw it.
    pub(super) fn redraw(&mut self) -> Vec<Effect> {
        draw(self.terminal, &mut self.state);
        self.frames.drawn(Instant::now());
        (self.on_frame)(&self.state);
        Vec::new()
    }

    /// A background task finished.
    pub(super) fn done(&mut self, done: Done) -> Vec<Effect> {
        let Some(msg) = self.driver.finished(done) else {
            return Vec::new();
        };
        let effects = self.state.update(msg);
        self.frames.request();
        effects
    }

    /// `first` and the messages waiting behind it; the clock is told the time first when
    /// a flood of them kept its own arm from running.
    pub(super) fn inbound(
        &mut self,
        first: Inbound,
        rest: &mut mpsc::Receiver<Inbound>,
    ) -> Result<Vec<Effect>, Ended> {
        if self.last_clock.elapsed() >= Duration::from_millis(100) {
            self.last_clock = Instant::now();
            self.state.update(Msg::Tick(self.started.elapsed()));
        }
        let effects = self
            .driver
            .batch(first, rest, &mut self.state, self.notifier)?;
        self.frames.request();
        Ok(effects)
    }

    /// The once-a-second clock: the elapsed times move while the run goes on.
    pub(super) fn tick(&mut self) -> Vec<Effect> {
        self.last_clock = Instant::now();
        self.state.update(Msg::Tick(self.started.elapsed()));
        if self.state.phase == Phase::Running {
            self.frames.request();
        }
        Vec::new()
    }

    /// A signal asked the program to end.
    pub(super) fn terminate(&mut self) -> Vec<Effect> {
        self.state.update(Msg::Terminate)
    }

    /// Carries out `effects` in order; the first that ends the session says how.
    pub(super) fn perform(&mut self, effects: Vec<Effect>) -> Option<Ended> {
        effects
            .into_iter()
            .find_map(|effect| self.driver.perform(effect, &self.state))
    }
}
