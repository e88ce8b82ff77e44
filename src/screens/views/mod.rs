//! The views that open above a screen, each one file with its own scroll, keys and render:
//! help, the cancel, revert and discard questions, a waiting approval, a report, a tool
//! call's card (or the engine's: a round's observation, a run of the check), a diff, the
//! commit and note editors and the run log. What a view is given and answers is in `view`; `overlay`
//! joins them into the one stack the state keeps. No view reads the state.

pub mod approval;
pub mod cancel;
pub mod card;
pub mod commit;
pub mod diff;
pub mod discard;
pub mod help;
pub mod note;
pub mod observation;
pub mod overlay;
pub mod report_detail;
pub mod revert;
pub mod runlog;
pub mod view;
