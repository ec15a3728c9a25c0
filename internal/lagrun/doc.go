// Package lagrun runs txload lag: a workload on a source database through
// the runner, package lag's instrument around it (the marker stream, the
// reader on the destination, the servers' views, the progress ticker),
// the drain until the destination has every marker, the convergence proof,
// the SLO's verdicts, the text report and the --json document.
//
// Package lag is the instrument and knows no engine, workload or report;
// this package puts it to work beside the load, as internal/runner does
// for run and sweep. The CLI maps lag's flags to Options and calls Run.
package lagrun
