//! The `Attack` state: Chaos's rounds on a fix whose unit tests pass.
//!
//! A round either re-runs the findings of earlier rounds that a fix has not yet passed, or,
//! when every finding passes, has Chaos write a new test file: it runs against the fix (a file
//! that cannot run goes back to Chaos for repair, `chaos.max_repairs` times), the Critic judges
//! its failing tests, and those it keeps go to the Artisan as a new iteration. A fix that leaves
//! more findings failing than the best state Chaos has judged is undone back to that state.
//! Findings never count toward the entropy breaker. The run succeeds when a round finds
//! nothing, or when the rounds are spent and every finding passes; it stops `max_iterations`
//! when they are spent with findings still failing.

use std::collections::BTreeSet;
use std::sync::Arc;

use actix::Addr;

use crate::events::event::Event;
use crate::machine::state::{Iteration, Next, Outcome, State};
use crate::policy::adversarial::{candidates, could_not_run, Candidate};
use crate::prompt::bundle::{AdversarialView, ContextBundle, SuiteView};
use crate::role::Role;
use crate::roles::caller::watched;
use crate::roles::chaos::{
    Chaos, EarlierTest, Keep, Repair, Rerun, RunSuite, SuiteOf, SuiteRun, UncoveredLine, Write,
};
use crate::schema::adversarial::{AdversarialReport, Finding, FindingStatus, Floor, Suite};
use crate::schema::mutation::{Equivalent, Mutant};
use crate::schema::report::Status;
use crate::schema::test_run::{CaseStatus, TestRun};
use crate::supervisor::run::Run;
use crate::supervisor::steps::Step;

/// Chaos's file of one round, after its repairs.
struct Attack {
    /// The file and its run on the fix; `None`: it never ran.
    ran: Option<(String, SuiteRun)>,
    repairs: u32,
    /// The survivors Chaos argued equivalent.
    equivalent: Vec<Equivalent>,
}

impl Run {
    /// Whether a fix whose unit tests pass goes to Chaos before the run may succeed.
    pub(super) fn chaos_due(&self) -> bool {
        self.settings.chaos.enabled && self.team.chaos.is_some()
    }

    /// One round of Chaos on the fix on disk (see the module's docs), with the fix's review
    /// beside it: its verdict is heard before the round's outcome is.
    pub(super) async fn attack(&mut self, it: Box<Iteration>) -> Step {
        let step = self.attack_round(it).await?;
        self.settle_passing_review().await?;
        Ok(step)
    }

    async fn attack_round(&mut self, it: Box<Iteration>) -> Step {
        let n = it.n;
        let Some(chaos) = self.team.chaos.clone() else {
            return Ok(Next::Stop(self.chaos_passed(n)));
        };
        let max_rounds = self.settings.chaos.max_rounds;
        let strategies = self
            .settings
            .chaos
            .strategies
            .iter()
            .map(|s| s.as_str().to_string())
            .collect();
        let report = self
            .state
            .adversarial
            .get_or_insert_with(|| AdversarialReport {
                strategies,
                ..AdversarialReport::default()
            });
        if report.open().next().is_some() {
            let open = self.recheck(&chaos, n).await?;
            if open > 0 {
                let report = self.adversarial();
                report.rounds += 1;
                if report.rounds > max_rounds {
                    return Ok(Next::Stop(self.rounds_spent()));
                }
                self.checkpoint().await?;
                return Ok(Next::Continue(State::Begin));
            }
        }
        if self.adversarial().rounds >= max_rounds || self.settings.chaos.attacks().next().is_none()
        {
            return self.attacks_done(&chaos, &it).await;
        }
        self.adversarial().rounds += 1;
        let round = self.adversarial().rounds;
        let (found, _) = self
            .new_round(&chaos, &it, round, Vec::new(), Vec::new())
            .await?;
        self.checkpoint().await?;
        if found == 0 {
            return self.attacks_done(&chaos, &it).await;
        }
        if !self.settings.chaos.must_pass {
            self.events.emit(Event::Note {
                message: format!(
                    "Chaos found {found} failing adversarial test{} (success_criteria.adversarial_tests_pass is false: reported, not fixed)",
                    plural(found)
                ),
            });
            return self.attacks_done(&chaos, &it).await;
        }
        Ok(Next::Continue(State::Begin))
    }

    /// The report's section, which `attack` creates before any round.
    pub(super) fn adversarial(&mut self) -> &mut AdversarialReport {
        self.state.adversarial.get_or_insert_with(Default::default)
    }

    /// Chaos writes round `round`'s file (to kill `survivors`, or to run `uncovered` lines,
    /// when there are any), it runs on the fix, and the Critic judges what fails. Returns how
    /// many findings it kept, and the survivors Chaos argued equivalent.
    pub(super) async fn new_round(
        &mut self,
        chaos: &Addr<Chaos>,
        it: &Iteration,
        round: u32,
        survivors: Vec<Mutant>,
        uncovered: Vec<UncoveredLine>,
    ) -> Result<(u32, Vec<Equivalent>), Outcome> {
        let n = it.n;
        let context = self.fix_context(it)?;
        let Attack {
            ran,
            repairs,
            equivalent,
        } = self
            .written_and_run(chaos, n, round, &context, survivors, uncovered)
            .await?;
        let Some((suite, SuiteRun { run, path })) = ran else {
            return Ok((0, equivalent));
        };
        let tests = run.tests.len() as u32;
        let failures = candidates(&run, &[]);
        let report = self.adversarial();
        report.tests_generated += tests;
        report.suites.push(Suite {
            round,
            path: path.clone(),
            tests,
            repairs,
        });
        self.events.emit(Event::ChaosSuite {
            iteration: n,
            round,
            path,
            tests,
            failed: failures.len() as u32,
            repairs,
        });
        if failures.is_empty() {
            return Ok((0, equivalent));
        }
        let kept = self
            .judged(chaos, n, round, (context, suite), &run, failures)
            .await?;
        Ok((kept, equivalent))
    }

    /// Chaos's test file of round `round`, written and run on the fix: one that cannot be
    /// written or run goes back to Chaos to repair, up to `chaos.max_repairs` times (then the
    /// round finds nothing, said in a warning).
    async fn written_and_run(
        &mut self,
        chaos: &Addr<Chaos>,
        n: u32,
        round: u32,
        context: &Arc<ContextBundle>,
        survivors: Vec<Mutant>,
        uncovered: Vec<UncoveredLine>,
    ) -> Result<Attack, Outcome> {
        let earlier = self.earlier_tests();
        let max_repairs = self.settings.chaos.max_repairs;
        let mut repair = None;
        let mut repairs = 0;
        loop {
            let attack = self
                .ask(
                    Role::Chaos,
                    chaos,
                    Write {
                        iteration: n,
                        round,
                        context: context.clone(),
                        earlier: earlier.clone(),
                        repair: repair.take(),
                        survivors: survivors.clone(),
                        uncovered: uncovered.clone(),
                        cancel: self.steps.clone(),
                    },
                )
                .await?;
            let equivalent = attack.equivalent;
            let (suite, problem) = match attack.suite {
                None => (
                    attack.reply,
                    "Your reply had no fenced code block: reply with the whole test file in one."
                        .to_string(),
                ),
                Some(suite) => match self.unrestorable(&suite).await {
                    // A placeholder it cannot put back: the file is not written; Chaos repairs.
                    Some(why) => (suite, format!("Your file could not be written: {why}. Copy every placeholder exactly as you were given it.")),
                    None => {
                    let ran = self
                        .ask(
                            Role::Chaos,
                            chaos,
                            RunSuite {
                                round,
                                suite: suite.clone(),
                                cancel: self.steps.clone(),
                            },
                        )
                        .await?;
                    self.adversarial_ran(n, round, &ran.run).await?;
                    match could_not_run(&ran.run) {
                        None => {
                            return Ok(Attack {
                                ran: Some((suite, ran)),
                                repairs,
                                equivalent,
                            })
                        }
                        Some(why) => (suite, why),
                    }
                    }
                },
            };
            if repairs >= max_repairs {
                self.warn(format!(
                    "iteration {n}: Chaos's round {round} test file could not run after {repairs} repair{}: {}; the round found nothing",
                    plural(repairs),
                    first_line(&problem)
                ));
                return Ok(Attack {
                    ran: None,
                    repairs,
                    equivalent,
                });
            }
            repairs += 1;
            repair = Some(Repair {
                suite,
                error: problem,
            });
        }
    }

    /// Re-runs the files holding open findings on the fix on disk; marks those it passes
    /// fixed. A fix that leaves more open than the best state judged so far is undone back to
    /// it (and its findings re-run there). Returns the findings still open.
    async fn recheck(&mut self, chaos: &Addr<Chaos>, n: u32) -> Result<u32, Outcome> {
        let (fixed, open) = self.rerun_findings(chaos, n).await?;
        self.events.emit(Event::ChaosRecheck {
            iteration: n,
            fixed,
            open: open.clone(),
        });
        let here = self.state.on_disk;
        let now = open.len() as u32;
        match self.state.adversarial_floor {
            Some(floor) if now > floor.open && here != Some(floor.iteration) => {
                let content = self.checkpoint_content(floor.iteration).await?;
                let why = format!(
                    "it left {now} adversarial test{} failing where {} failed before",
                    plural(now),
                    floor.open
                );
                let first = open.first().cloned().unwrap_or_default();
                self.undo(n, floor.iteration, content.clone(), &why, &first)
                    .await?;
                // The state undone to is the best again (the unit tests rank the two alike).
                if let Some(best) = self.state.best.as_mut() {
                    best.iteration = floor.iteration;
                }
                self.best_content = Some(content);
                let (_, open) = self.rerun_findings(chaos, n).await?;
                Ok(open.len() as u32)
            }
            _ => {
                if let Some(here) = here {
                    self.state.adversarial_floor = Some(Floor {
                        iteration: here,
                        open: now,
                    });
                }
                Ok(now)
            }
        }
    }

    /// Runs every file with an open finding again and updates the findings: `(fixed, open)`,
    /// the tests that pass now and those still failing.
    async fn rerun_findings(
        &mut self,
        chaos: &Addr<Chaos>,
        n: u32,
    ) -> Result<(Vec<String>, Vec<String>), Outcome> {
        let rounds: BTreeSet<u32> = self
            .state
            .adversarial
            .iter()
            .flat_map(|r| r.findings.iter())
            .map(|f| f.round)
            .collect();
        let mut runs = Vec::new();
        for round in rounds {
            let run = self
                .ask(
                    Role::Chaos,
                    chaos,
                    Rerun {
                        round,
                        cancel: self.steps.clone(),
                    },
                )
                .await?;
            self.adversarial_ran(n, round, &run).await?;
            runs.push((round, run));
        }
        let report = self.adversarial();
        let (mut fixed, mut open) = (Vec::new(), Vec::new());
        for finding in &mut report.findings {
            let Some((_, run)) = runs.iter().find(|(r, _)| *r == finding.round) else {
                continue;
            };
            let was = finding.status;
            finding.status = match outcome_of(run, &finding.test) {
                Some(CaseStatus::Pass) => FindingStatus::Fixed,
                _ => FindingStatus::Open,
            };
            match finding.status {
                FindingStatus::Open => open.push(finding.test.clone()),
                FindingStatus::Fixed if was == FindingStatus::Open => {
                    fixed.push(finding.test.clone())
                }
                FindingStatus::Fixed => {}
            }
        }
        report.failures_fixed = report
            .findings
            .iter()
            .filter(|f| f.status == FindingStatus::Fixed)
            .count() as u32;
        Ok((fixed, open))
    }

    /// A run of Chaos's file, kept: saved in the session folder, its time counted as test time.
    pub(super) async fn adversarial_ran(
        &mut self,
        n: u32,
        round: u32,
        run: &TestRun,
    ) -> Result<(), Outcome> {
        self.timed(run.duration_ms);
        let save = self.store.save_adversarial_results(n, round, run);
        watched(&self.steps, save).await.map_err(|e| self.fail(e))
    }

    /// The iteration's context with the target as the fix on disk has it.
    fn fix_context(&self, it: &Iteration) -> Result<Arc<ContextBundle>, Outcome> {
        let mut context = self.context_of(it)?;
        if let Some(code) = &it.written {
            if self.state.on_disk == Some(it.n) {
                Arc::make_mut(&mut context).target.content = code.clone();
            }
        }
        Ok(context)
    }

    /// What Chaos wrote before, and what became of it.
    fn earlier_tests(&self) -> Vec<EarlierTest> {
        let Some(report) = &self.state.adversarial else {
            return Vec::new();
        };
        let found = report.findings.iter().map(|f| EarlierTest {
            round: f.round,
            test: f.test.clone(),
            status: match f.status {
                FindingStatus::Open => "found a failure, still open".into(),
                FindingStatus::Fixed => "found a failure, since fixed".into(),
            },
            reason: None,
        });
        let dropped = report.rejected.iter().map(|r| EarlierTest {
            round: r.round,
            test: r.test.clone(),
            status: "dropped by the Critic".into(),
            reason: Some(r.reason.clone()),
        });
        found.chain(dropped).collect()
    }

    /// The open findings and their files, for the Artisan's next prompt.
    pub(super) async fn adversarial_view(&self) -> Option<AdversarialView> {
        let report = self.state.adversarial.as_ref()?;
        let open: Vec<&Finding> = report.open().collect();
        if open.is_empty() {
            return None;
        }
        let chaos = self.team.chaos.as_ref()?;
        let rounds: BTreeSet<u32> = open.iter().map(|f| f.round).collect();
        let mut suites = Vec::new();
        for round in rounds {
            if let Ok(Some(content)) = chaos.send(SuiteOf { round }).await {
                let path = report
                    .suites
                    .iter()
                    .find(|s| s.round == round)
                    .map(|s| s.path.clone())
                    .unwrap_or_default();
                suites.push(SuiteView { path, content });
            }
        }
        Some(AdversarialView {
            failures: open
                .iter()
                .map(|f| Candidate {
                    test: f.test.clone(),
                    message: f.message.clone(),
                })
                .collect(),
            suites,
        })
    }

    /// The run succeeds: Chaos's accepted files are added to the project first when
    /// `chaos.keep_tests` asks for it.
    pub(super) async fn chaos_success(&mut self, chaos: &Addr<Chaos>, n: u32) -> Step {
        if self.settings.chaos.keep_tests {
            let rounds = self.passing_rounds();
            if !rounds.is_empty() {
                let (kept, warnings) = self.ask(Role::Chaos, chaos, Keep { rounds }).await?;
                for w in warnings {
                    self.warn(w);
                }
                if !kept.is_empty() {
                    self.events.emit(Event::Note {
                        message: format!("Chaos's tests added to the project: {}", kept.join(", ")),
                    });
                }
                self.adversarial().kept_tests = kept;
            }
        }
        Ok(Next::Stop(self.chaos_passed(n)))
    }

    /// Chaos found nothing more: the run succeeds.
    pub(super) fn chaos_passed(&self, n: u32) -> Outcome {
        let chaos = match &self.state.adversarial {
            // `success_criteria.adversarial_tests_pass: false`: findings reported, not fixed.
            Some(r) if r.open().next().is_some() => {
                let open = r.open().count() as u32;
                format!(
                    "; Chaos's findings are reported, not fixed: {open} adversarial test{} still failing (success_criteria.adversarial_tests_pass is false)",
                    plural(open)
                )
            }
            Some(r) if r.failures_fixed > 0 => format!(
                "; Chaos's adversarial tests pass too ({} finding{} fixed in {} round{})",
                r.failures_fixed,
                plural(r.failures_fixed),
                r.rounds,
                plural(r.rounds)
            ),
            Some(r) if r.rounds > 0 => format!(
                "; Chaos's adversarial tests pass too ({} round{})",
                r.rounds,
                plural(r.rounds)
            ),
            _ => String::new(),
        };
        let mutation = match self
            .state
            .adversarial
            .as_ref()
            .and_then(|r| r.mutation.as_ref())
        {
            Some(m) => match m.min_score {
                Some(min) => format!(
                    "; mutation score {}% (at least {min}% asked)",
                    m.scores.operational
                ),
                None => format!("; mutation score {}%", m.scores.operational),
            },
            None => String::new(),
        };
        Outcome::new(
            Status::Success,
            format!("{}{chaos}{mutation}", self.success_reason(n)),
        )
    }

    /// The rounds are spent with findings still failing.
    fn rounds_spent(&self) -> Outcome {
        let open: Vec<String> = self
            .state
            .adversarial
            .iter()
            .flat_map(|r| r.open())
            .map(|f| f.test.clone())
            .collect();
        Outcome::new(
            Status::MaxIterations,
            format!(
                "chaos.max_rounds ({}) spent with {} adversarial test{} still failing: {}",
                self.settings.chaos.max_rounds,
                open.len(),
                plural(open.len() as u32),
                open.join(", ")
            ),
        )
    }
}

/// How `test` ended in `run`, if it ran.
fn outcome_of(run: &TestRun, test: &str) -> Option<CaseStatus> {
    run.tests.iter().find(|t| t.id == test).map(|t| t.status)
}

pub(super) fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}
