//! `Resume`: a timer of the run is due (relayed by [`timers`](super::timers)). It changes
//! nothing by itself: the run goes on after the commit ([`advance`](super::advance)), from its
//! stored state.

use async_trait::async_trait;
use topics::runs::Resume;
use topics::{Applied, Apply, Outcome};

use super::RunsStage;
use crate::Error;
use crate::stage::Context;

#[async_trait]
impl Apply<Resume, Context> for RunsStage {
    async fn apply(&self, _cx: &mut Context, _resume: &Resume) -> Result<Applied<()>, Error> {
        Ok(Outcome::done(()).into())
    }
}
