// Package runner starts the runs of one instance for whichever process
// asks (Runner): hobbs run (a session), hobbs playbook run (by hand or a
// schedule's), hobbs serve (a webhook's triggered run, a chat turn). Each
// run is planned by launcher.PlanRun (package plan decides what it may do)
// and carried out by the launcher; what is kept of it is done here: a
// headless run is a task in the task log (Headless: started before the
// session, finished with the outcome its JSON result and report decide,
// RunOutcome), a chat turn's reply is read from its JSON result with every
// secret value masked (RunChat). The launcher never refers back to this
// package.
package runner
