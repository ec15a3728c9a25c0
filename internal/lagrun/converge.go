package lagrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/lag"
	"github.com/txload/txload/report"
)

// Convergence is what comparing the two sides found.
type Convergence struct {
	Tables  []*lag.Diff
	Markers *lag.MarkerDiff
	// Compared counts the comparisons of each table (rechecks included).
	Compared []int
	Took     time.Duration
}

// Failures says what differs, a phrase per table and one for the markers;
// none when the destination holds exactly the source's rows.
func (c *Convergence) Failures() []string {
	var out []string
	for _, d := range c.Tables {
		if !d.OK() {
			out = append(out, fmt.Sprintf("%s: %s", d.Source, strings.Join(differences(d), ", ")))
		}
	}
	if m := c.Markers; m != nil && !m.OK() {
		out = append(out, "markers: "+markerFaults(*m))
	}
	return out
}

// differences says how a table that differs does.
func differences(d *lag.Diff) []string {
	var parts []string
	for _, p := range []struct {
		n    int64
		what string
	}{{d.Missing, "missing"}, {d.Extra, "extra"}, {d.Differing, "differing"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(d.MissingColumns) > 0 {
		parts = append(parts, "columns missing: "+strings.Join(d.MissingColumns, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d rows against %d", d.DestRows, d.SourceRows))
	}
	return parts
}

// converge compares every table and the markers. With a replication of
// the user's, tables that differ are compared again, a second apart, up to
// three times while the drain timeout allows: a pipeline that does not keep
// the source's commit order may still be applying them when the last
// marker arrives. PostgreSQL's own replication keeps it: once the last
// marker is there, so is everything committed before it.
func (p *plan) converge(ctx context.Context, pr *pair, first, writers int, loadEnd time.Time) (*Convergence, error) {
	src, err := pr.src.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	dst, err := pr.dst.Target.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer dst.Close(context.WithoutCancel(ctx))
	conv := &Convergence{}
	t0 := time.Now()
	defer func() { conv.Took = time.Since(t0) }()
	// Rechecks are for a pipeline of the user's that may apply out of
	// order, and only while the drain timeout allows.
	recheck := pr.mode == "external" && !pr.same
	deadline := loadEnd.Add(p.drainTimeout)
	for _, t := range p.tables {
		d, n, err := compareTable(ctx, src, dst, t, recheck, deadline)
		if err != nil {
			return nil, err
		}
		conv.Tables, conv.Compared = append(conv.Tables, d), append(conv.Compared, n)
	}
	if conv.Markers, err = lag.CompareMarkers(ctx, src, dst, p.marker, first, writers, 10); err != nil {
		return nil, err
	}
	return conv, nil
}

// compareTable compares one table, and with recheck compares it again a
// second apart, up to three times, while it differs and deadline allows;
// n is the comparisons made.
func compareTable(ctx context.Context, src, dst *pgx.Conn, t lag.Pair, recheck bool, deadline time.Time) (d *lag.Diff, n int, err error) {
	for try := 0; ; try++ {
		if d, err = lag.CompareTable(ctx, src, dst, t, lag.CompareOptions{}); err != nil {
			return nil, n, err
		}
		n++
		if d.OK() || !recheck || try == 3 || time.Now().Add(time.Second).After(deadline) {
			return d, n, nil
		}
		select {
		case <-ctx.Done():
			return nil, n, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// markerFaults counts what the marker comparison found wrong: "1 gap,
// 0 repeats, 0 extra".
func markerFaults(m lag.MarkerDiff) string {
	return fmt.Sprintf("%s, %s, %d extra", report.Count(m.Gaps, "gap"), report.Count(m.Repeats, "repeat"), m.Extra)
}
