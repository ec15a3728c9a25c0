package failoverrun

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/lag"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/report"
)

// Result is what one failover run measured.
type Result struct {
	// Workload and Mode (async, sync: the embedded pair's replication;
	// cluster) name the run; Plan says what was done, in words.
	Workload, Mode, Plan string
	Fault                string
	URL                  string
	Server               pg.Server
	ProbeInterval        time.Duration
	// Before and After are the prober's view of the nodes.
	Before, After string
	// HeldAt is when the standby's link was paused (zero: never).
	HeldAt time.Time
	// FaultSent is when the fault was caused (the signal, the command's
	// start) or, waiting for a failover, first seen; FaultLogged and
	// FaultDown the old primary's log times (the embedded pair).
	FaultSent, FaultLogged, FaultDown time.Time
	// PromoteSent and PromoteRequested are the embedded promotion's;
	// NewPrimary when the new primary took writes (its log) or was first
	// seen (the prober); Timeline its timeline.
	PromoteSent, PromoteRequested, NewPrimary time.Time
	Timeline                                  uint32
	// NewAddr is the node named as the new primary (host:port, as the
	// URL names it), where the markers were counted and the workload
	// audited.
	NewAddr string
	// SplitBrain, when set, says that another node took writes too after
	// the failover: which, and how many of the lost commits it holds.
	SplitBrain string
	// CommandDone and CommandOutput are --failover-command's.
	CommandDone   time.Time
	CommandOutput string
	// OldNode and NewNode are the nodes the probe committed on before and
	// after; LastProbeOld and FirstProbeNew its last and first commits
	// there, ProbeAsked when it asked for the connection that made the
	// first.
	OldNode, NewNode                        string
	LastProbeOld, FirstProbeNew, ProbeAsked time.Time
	// LastOld and FirstNew are the last commit the old primary
	// acknowledged and the first on the new one (any writer); Unavailable
	// the time between, known within Precision.
	LastOld, FirstNew time.Time
	Unavailable       time.Duration
	Precision         time.Duration
	// Lag is the replication just before the fault.
	Lag *LagSample
	// Tally is the markers' comparison with the new primary.
	Tally Tally
	// Old is the embedded pair's old primary, restarted after the run to
	// be read (nil: not read, nothing was lost).
	Old *OldPrimary
	// Straddled counts the operations under way or due during the
	// unavailability, Committed of them those that committed; Latency
	// their latencies (intended start to end), sorted.
	Straddled, StraddledOK int64
	Latency                []time.Duration
	// Points are the timeline: commits, failed attempts and failed
	// transactions per second, every 100 ms (timelineLines).
	Points []report.SeriesPoint
	// Outcome is the load's, as the runner ran it.
	Outcome *runner.Outcome
	// Err is why the run failed, if it did (no password); Interrupted
	// says Ctrl-C stopped it.
	Err         string
	Interrupted bool
	// LoadEnd is when the load (and its audit) ended.
	LoadEnd time.Time
	// uncounted is why the markers could not be counted (a spool that
	// $TMPDIR had no room for, the new primary unreadable): Tally is
	// empty.
	uncounted string
	// startAt is the load's start, where the timeline begins.
	startAt time.Time
}

// loadWindowEnd is when the load was to end: its start plus the warm-up
// and the duration.
func (r *Result) loadWindowEnd() time.Time {
	if o := r.Outcome; o != nil {
		return r.startAt.Add(o.Engine.Warmup + o.Engine.Duration)
	}
	return r.LoadEnd
}

// keyValues writes rows of two cells as "key  value", keys aligned.
func keyValues(w io.Writer, rows [][]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

// analyse works out the write unavailability, the operations that
// straddled it and the timeline from what the probe, the markers and the
// timeline kept.
func (s *session) analyse() error {
	res, pb := s.res, s.probe
	oldNode, newNode, lastOld, firstNew, err := s.ledger.probeSpan()
	if err != nil {
		return err
	}
	if oldNode >= 0 {
		res.LastProbeOld = time.Unix(0, lastOld)
	}
	if newNode >= 0 {
		res.FirstProbeNew = time.Unix(0, firstNew)
	}
	pb.mu.Lock()
	if oldNode >= 0 {
		res.OldNode = pb.nodes[oldNode]
	}
	if newNode >= 0 {
		res.NewNode, res.ProbeAsked = pb.nodes[newNode], pb.connected[newNode]
	}
	pb.mu.Unlock()
	if newNode >= 0 {
		// The largest gap between two acknowledgements from the probe's
		// last commit on the old node to its first on the new one is the
		// failover: every writer's commits bound it.
		from, to, err := s.ledger.largestGap(res.LastProbeOld.UnixNano(), res.FirstProbeNew.UnixNano())
		if err != nil {
			return err
		}
		if to != 0 {
			res.LastOld, res.FirstNew = time.Unix(0, from), time.Unix(0, to)
		}
		res.Unavailable = res.FirstNew.Sub(res.LastOld)
		res.Precision = res.ProbeInterval + res.FirstProbeNew.Sub(res.ProbeAsked)
		for _, sp := range s.tl.straddled(res.LastOld, res.FirstNew) {
			res.Straddled++
			if sp.ok {
				res.StraddledOK++
			}
			res.Latency = append(res.Latency, time.Duration(sp.end-sp.intended))
		}
		slices.Sort(res.Latency)
	}
	res.Points = s.tl.points()
	res.startAt = s.tl.start
	return nil
}

// Failures are what the run found wrong, each led by the mode: commits
// lost or reborn, the workload's own check's violations, a failover that
// did not happen.
func (r *Result) Failures() []string {
	var out []string
	for _, f := range append(r.problems(), r.violations()...) {
		out = append(out, r.Mode+": "+f)
	}
	return out
}

// violations are the workload's check's.
func (r *Result) violations() []string {
	if o := r.Outcome; o != nil && o.Check != nil {
		return o.Check.Violations
	}
	return nil
}

// problems are what the run found wrong, the workload's check aside.
func (r *Result) problems() []string {
	var out []string
	t := r.Tally
	if t.Lost > 0 {
		if r.failedOver() {
			out = append(out, fmt.Sprintf("%d acknowledged commits lost by the failover", t.Lost))
		} else {
			out = append(out, fmt.Sprintf("%d acknowledged commits are not on %s", t.Lost, r.countedOn()))
		}
	}
	if t.Phantom > 0 {
		out = append(out, fmt.Sprintf("%d rolled-back transactions are on %s", t.Phantom, r.countedOn()))
	}
	if r.SplitBrain != "" {
		out = append(out, "SPLIT BRAIN: "+r.SplitBrain)
	}
	if r.FirstNew.IsZero() && r.Err == "" && !r.Interrupted {
		out = append(out, "no commit on a new primary was seen")
	}
	if o := r.Outcome; o != nil && o.Result != nil && o.Result.Aborted > 0 {
		out = append(out, fmt.Sprintf("%d clients aborted", o.Result.Aborted))
	}
	return out
}

// failed is the run's verdict in one line when it found something wrong
// (or failed itself), "" when not: the HTML report's red line. The
// check's violations are counted, not repeated: the report lists them.
func (r *Result) failed() string {
	ps := r.problems()
	if v := r.violations(); len(v) > 0 {
		n := fmt.Sprintf("%d violations", len(v))
		if len(v) == 1 {
			n = "a violation"
		}
		ps = append(ps, fmt.Sprintf("%s's check found %s", r.Workload, n))
	}
	if r.Err != "" {
		ps = append(ps, "the run failed: "+r.Err)
	}
	if len(ps) == 0 {
		return ""
	}
	return "FAILED (" + r.Mode + "): " + strings.Join(ps, "; ")
}

// failedOver says a new primary was seen: it took writes (its log, the
// prober) or a commit.
func (r *Result) failedOver() bool { return !r.NewPrimary.IsZero() || !r.FirstNew.IsZero() }

// noFault says why no fault was caused or seen, "" when one was.
func (r *Result) noFault() string {
	switch {
	case !r.FaultSent.IsZero():
		return ""
	case r.Interrupted:
		return "the run was interrupted before the fault was due: no fault was caused, no failover happened"
	}
	return "no fault was caused or seen: no failover happened"
}

// countedOn is the node the markers were compared with, in words: the new
// primary after a failover, the primary when there was none.
func (r *Result) countedOn() string {
	switch {
	case r.failedOver():
		return "the new primary"
	case r.FaultSent.IsZero():
		return "the primary"
	}
	return "the node taking writes after the run (no new primary was seen)"
}

// quantile is the q-th (0..1) of sorted durations.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// bytesString is a byte count for people.
func bytesString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// maxListed is how many lost or ambiguous commits the text lists (--json
// has them all).
const maxListed = 20

// writeResult writes the failover's block of the report.
func writeResult(w io.Writer, r *Result) {
	fmt.Fprintf(w, "failover: %s\n", r.heading())
	keyValues(w, resultRows(r))
	t := r.Tally
	listCommits(w, "lost", t.LostIDs)
	listCommits(w, "ambiguous", t.AmbiguousIDs)
	listCommits(w, "PHANTOM", t.PhantomIDs)
	fmt.Fprintln(w)
}

// heading is what the run was to do: its plan, said to be only that when
// it was interrupted before the fault.
func (r *Result) heading() string {
	if r.Interrupted && r.FaultSent.IsZero() {
		return r.Plan + " (planned: interrupted before the fault)"
	}
	return r.Plan
}

// resultRows are the failover's figures, as (what, value) rows.
func resultRows(r *Result) [][]string {
	rows := [][]string{}
	add := func(k, v string) { rows = append(rows, []string{k, v}) }
	if r.Interrupted {
		add("INTERRUPTED", "the figures cover what ran before the interrupt")
	}
	nf := r.noFault()
	if !r.HeldAt.IsZero() {
		add("standby held back", clock(r.HeldAt)+" (its replication link paused)")
	}
	fault := clock(r.FaultSent)
	switch {
	case nf != "":
		fault = "NONE: " + nf
	case r.CommandOutput != "" || !r.CommandDone.IsZero():
		fault += fmt.Sprintf(" --failover-command started; it returned at %s", clock(r.CommandDone))
	case !r.FaultDown.IsZero():
		fault += " signal sent"
		if !r.FaultLogged.IsZero() {
			fault += "; logged " + clock(r.FaultLogged)
		}
		fault += "; down " + clock(r.FaultDown)
	case !r.FaultSent.IsZero():
		fault += " old primary first seen gone"
	}
	add("fault", fault)
	if !r.PromoteRequested.IsZero() {
		add("promotion", fmt.Sprintf("requested %s, taking writes %s (log), timeline %d", clock(r.PromoteRequested), clock(r.NewPrimary), r.Timeline))
		add("server logs", fmt.Sprintf("old primary down %s after the signal; the new one took writes %s after the signal, %s after the old was down",
			ms(r.FaultDown.Sub(r.FaultSent)), ms(r.NewPrimary.Sub(r.FaultSent)), ms(r.NewPrimary.Sub(r.FaultDown))))
	} else if !r.NewPrimary.IsZero() {
		add("new primary seen", fmt.Sprintf("%s, timeline %d (%s)", clock(r.NewPrimary), r.Timeline, r.After))
	}
	if !r.NewPrimary.IsZero() && !r.startAt.IsZero() && r.NewPrimary.After(r.loadWindowEnd()) {
		add("NOTE", fmt.Sprintf("the new primary took writes %s after the load's end: the clients did not live through the whole failover (a longer --duration, or an earlier --at)", ms(r.NewPrimary.Sub(r.loadWindowEnd()))))
	}
	switch {
	case nf != "":
		add("write unavailability", "none: no failover")
	case r.FirstNew.IsZero() && r.Interrupted:
		add("write unavailability", "unknown: interrupted before a commit on a new primary")
	case r.FirstNew.IsZero():
		add("write unavailability", "unknown: no commit on a new primary was seen")
	default:
		add("last commit, old primary", fmt.Sprintf("%s (%s)", clock(r.LastOld), r.OldNode))
		add("first commit, new primary", fmt.Sprintf("%s (%s)", clock(r.FirstNew), r.NewNode))
		add("write unavailability", fmt.Sprintf("%s (±%s: a probe commits every %s)", ms(r.Unavailable), ms(r.Precision), r.ProbeInterval))
	}
	if nf != "" {
		add("replication, last sample", lagLine(r))
	} else {
		add("replication before", lagLine(r))
	}
	add("clients saw", clientsLine(r))
	if r.Straddled > 0 {
		add("operations straddling", fmt.Sprintf("%d (%d committed): latency p50 %s, p99 %s, max %s", r.Straddled, r.StraddledOK,
			ms(quantile(r.Latency, .5)), ms(quantile(r.Latency, .99)), ms(r.Latency[len(r.Latency)-1])))
	}
	t := r.Tally
	if r.uncounted != "" {
		why := ""
		if r.Interrupted && nf == "" && !r.failedOver() {
			why = "the run was interrupted after the fault, before a new primary took writes: "
		}
		add("markers", "NOT COUNTED: "+why+r.uncounted)
		return rows
	}
	if r.SplitBrain != "" {
		add("SPLIT BRAIN", r.SplitBrain)
	}
	add("acknowledged commits", fmt.Sprintf("%d (%d of them the probe's)", t.Acked, t.Probe))
	on := r.countedOn()
	if r.NewAddr != "" && r.failedOver() {
		on += " " + r.NewAddr
	}
	still := ""
	if nf != "" {
		still = " (still the primary: no failover)"
	}
	add("lost", fmt.Sprintf("%d (%d of them the probe's): acknowledged, not on %s%s", t.Lost, t.LostProbe, on, still))
	add("ambiguous", fmt.Sprintf("%d, %d of them on %s", t.Ambiguous, t.Survived, on))
	if o := r.Old; o != nil {
		v := fmt.Sprintf("holds %d of the %d lost commits, and %d of the ambiguous ones the new primary lacks", o.Holds, t.Lost, o.AmbiguousHeld)
		if o.Err != "" {
			v = "could not be read: " + o.Err
		}
		add("old primary, restarted", v)
	}
	if t.Phantom > 0 {
		add("PHANTOM", fmt.Sprintf("%d rolled-back transactions are on %s", t.Phantom, on))
	}
	if t.Unresolved > 0 {
		// Markers, not operations: the drain's abandoned operations
		// include those that had not sent their marker yet.
		add("unresolved", fmt.Sprintf("%d markers of transactions still in flight when the run ended (one not yet at its marker has none), %d of them on %s", t.Unresolved, t.Found, on))
	}
	return rows
}

// listCommits lists commits by id.
func listCommits(w io.Writer, what string, ids []Commit) {
	if len(ids) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s commits (writer/seq of their marker in %s: whose, when)%s:\n", what, lag.Table, more(len(ids)))
	for i, c := range ids {
		if i == maxListed {
			break
		}
		who := fmt.Sprintf("client %d, attempt %d", c.Client, c.Seq)
		if c.Client < 0 {
			who = fmt.Sprintf("probe, commit %d", c.Seq)
		}
		fmt.Fprintf(w, "    %d/%d  %s, %s\n", c.Writer, c.Seq, who, clock(c.At))
		for _, row := range c.Rows {
			fmt.Fprintf(w, "      %s\n", row)
		}
	}
}

func more(n int) string {
	if n > maxListed {
		return fmt.Sprintf(", the first %d of %d (--json lists all)", maxListed, n)
	}
	return ""
}

func lagLine(r *Result) string {
	l := r.Lag
	if l == nil {
		return "not sampled"
	}
	if len(l.Standbys) == 0 {
		return "no standby streaming (" + clock(l.At) + ")"
	}
	var parts []string
	for _, s := range l.Standbys {
		parts = append(parts, fmt.Sprintf("%s (%s): %s not flushed, %s not replayed, replay_lag %s", s.Name, s.SyncState,
			bytesString(s.NotFlushed), bytesString(s.NotReplayed), ms(time.Duration(s.ReplayLagSec*float64(time.Second)))))
	}
	when := ""
	if !r.FaultSent.IsZero() {
		when = fmt.Sprintf(" (sampled %s before the fault)", ms(r.FaultSent.Sub(l.At)))
	}
	return strings.Join(parts, "; ") + when
}

// errorCounts are the failed attempts by class, and the failed
// reconnection attempts, of the whole run (warm-up aside).
func errorCounts(r *Result) (errs [metrics.NumClasses]int64, reconnects int64, outages int, down time.Duration) {
	o := r.Outcome
	if o == nil || o.Result == nil {
		return
	}
	all := o.Result.Total.Total("all")
	return all.Errors, o.Result.Total.Reconnects, o.Result.Outages, o.Result.Unreachable
}

func clientsLine(r *Result) string {
	errs, reconnects, outages, down := errorCounts(r)
	var parts []string
	for c, n := range errs {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", metrics.Class(c), n))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no errors")
	}
	return fmt.Sprintf("%s; failed reconnection attempts %d; outages %d, %s unreachable in all", strings.Join(parts, ", "), reconnects, outages, ms(down))
}

// writeComparison is the modes side by side.
func writeComparison(w io.Writer, rs []*Result) {
	fmt.Fprintln(w, "comparison:")
	report.Table(w, "  ", comparisonRows(rs))
	fmt.Fprintln(w)
}

// comparisonRows are the modes side by side, a header first.
func comparisonRows(rs []*Result) [][]string {
	rows := [][]string{{"replication", "tps", "unavailable", "lost", "ambiguous", "survived", "errors", "reconnects", "straddling p99", "check"}}
	for _, r := range rs {
		tps := "-"
		check := "-"
		var nerr int64
		errs, reconnects, _, _ := errorCounts(r)
		for _, n := range errs {
			nerr += n
		}
		if o := r.Outcome; o != nil && o.Result != nil {
			all := o.Result.Total.Total("all")
			tps = fmt.Sprintf("%.0f", float64(all.OK)/o.Result.Total.Elapsed.Seconds())
			if o.Check != nil {
				check = "ok"
				if n := len(o.Check.Violations); n > 0 {
					check = metrics.Count(n, "violation")
				}
			}
		}
		un := "-"
		if !r.FirstNew.IsZero() {
			un = ms(r.Unavailable)
		}
		rows = append(rows, []string{r.Mode, tps, un, fmt.Sprint(r.Tally.Lost), fmt.Sprint(r.Tally.Ambiguous), fmt.Sprint(r.Tally.Survived),
			fmt.Sprint(nerr), fmt.Sprint(reconnects), ms(quantile(r.Latency, .99)), check})
	}
	return rows
}
