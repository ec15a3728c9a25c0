package vote

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// audit is what the article and vote tables say.
type audit struct {
	articles, votes   int64 // rows
	counted           int64 // sum of article.votes
	mismatched        int64 // articles whose votes ≠ their vote rows
	maintained        bool  // any article.votes > 0: a counter run wrote them
	orphanVotes       int64 // vote rows for no article
	firstMismatchedID int64
	// want is the number of articles init loaded (0: unknown), inRange
	// the rows of ids 1..want.
	want, inRange int64
}

const auditSQL = `SELECT count(*),
	COALESCE(sum(a.votes), 0),
	count(*) FILTER (WHERE a.votes <> 0),
	count(*) FILTER (WHERE a.votes <> COALESCE(v.n, 0)),
	COALESCE(min(a.id) FILTER (WHERE a.votes <> COALESCE(v.n, 0)), 0)
FROM article a LEFT JOIN (SELECT article_id, count(*) AS n FROM vote GROUP BY article_id) v ON v.article_id = a.id`

func runAudit(ctx context.Context, t *pg.Target) (*audit, error) {
	a := &audit{}
	var nonZero int64
	err := workload.ReadSnapshot(ctx, t, "check vote", errNoSchema, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, auditSQL).Scan(&a.articles, &a.counted, &nonZero, &a.mismatched, &a.firstMismatchedID); err != nil {
			return fmt.Errorf("auditing the articles: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM article a WHERE a.id = v.article_id)) FROM vote v`).
			Scan(&a.votes, &a.orphanVotes); err != nil {
			return fmt.Errorf("counting votes: %w", err)
		}
		// init's settings say how many articles it loaded.
		var settings string
		err := tx.QueryRow(ctx, `SELECT settings FROM `+workload.MarkerTable+` WHERE workload = 'vote'`).Scan(&settings)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reading the articles init loaded: %w", err)
		}
		if _, err := fmt.Sscanf(settings, "articles=%d", &a.want); err != nil {
			a.want = 0
			return nil
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM article WHERE id BETWEEN 1 AND $1`, a.want).Scan(&a.inRange); err != nil {
			return fmt.Errorf("counting articles: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.maintained = nonZero > 0 || a.counted != 0
	return a, nil
}

func (a *audit) violations() []string {
	var v []string
	if a.maintained && a.mismatched > 0 {
		v = append(v, fmt.Sprintf("%s whose votes disagree with the vote rows (first: article %d)", metrics.Count(a.mismatched, "article"), a.firstMismatchedID))
	}
	// A vote is for one of the articles init loaded, whatever the variant.
	if a.orphanVotes > 0 {
		v = append(v, metrics.Count(a.orphanVotes, "vote")+" for articles that do not exist")
	}
	if a.want > 0 && a.inRange < a.want {
		v = append(v, fmt.Sprintf("%s missing (init loaded ids 1 to %d)", metrics.Count(a.want-a.inRange, "article"), a.want))
	}
	if a.want > 0 && a.inRange > a.want {
		v = append(v, fmt.Sprintf("%s more than the %d init loaded (an id duplicated)", metrics.Count(a.inRange-a.want, "article row"), a.want))
	}
	if a.want > 0 && a.articles > a.inRange {
		v = append(v, fmt.Sprintf("%s in article beyond ids 1 to %d (added by no vote)", metrics.Count(a.articles-a.inRange, "row"), a.want))
	}
	return v
}

func (a *audit) lines() []workload.Line {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	counted := "not maintained (join/matview variant)"
	if a.maintained {
		counted = fmt.Sprintf("verified: sum %d, %s mismatched", a.counted, metrics.Count(a.mismatched, "article"))
	}
	return []workload.Line{
		{Label: "articles", Value: i(a.articles)},
		{Label: "total votes", Value: i(a.votes)},
		{Label: "votes counted per article", Value: counted},
	}
}

func (a *audit) result(lines []workload.Line) *workload.CheckResult {
	maintained := int64(0)
	if a.maintained {
		maintained = 1
	}
	return &workload.CheckResult{
		Lines:      lines,
		Violations: a.violations(),
		Values: map[string]int64{
			"articles": a.articles, "total_votes": a.votes, "counted_votes": a.counted,
			"mismatched_articles": a.mismatched, "counter_maintained": maintained, "orphan_votes": a.orphanVotes,
		},
	}
}

// check verifies, for a counter run, that every article's votes equal its
// vote rows; it may run at any time.
func (g *gen) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	return a.result(a.lines()), nil
}

// runReport is the audit, the votes reconciled with the vote rows the run
// added, and, for --variant matview, the view's staleness.
func (g *gen) runReport(ctx context.Context, t *pg.Target, total *metrics.Snapshot, rs *runState) (*workload.CheckResult, error) {
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	rec := workload.Reconcile(total.Ops[1], a.votes-rs.baseline)
	res := a.result(append(a.lines(), rec.Lines("vote table")...))
	rec.Into(res)
	if g.cfg.variant != "matview" {
		return res, nil
	}
	reads := rs.reads.Load()
	var mean, age float64
	if reads > 0 {
		mean = float64(rs.stalenessSum.Load()) / float64(reads)
		age = float64(rs.ageSumMicros.Load()) / float64(reads) / 1000
	}
	res.Lines = append(res.Lines,
		workload.Line{Label: "view refreshes", Value: fmt.Sprintf("%d every %s (%d failed)", rs.refreshes.Load(), g.cfg.refresh, rs.refreshErrors.Load())},
		workload.Line{Label: "staleness (votes)", Value: fmt.Sprintf("mean %.1f, max %d over %d reads", mean, rs.stalenessMax.Load(), reads)},
		workload.Line{Label: "view age at read", Value: fmt.Sprintf("mean %.1f ms", age)},
	)
	res.Values["view_refreshes"] = rs.refreshes.Load()
	res.Values["staleness_max"] = rs.stalenessMax.Load()
	res.Values["staleness_mean_milli"] = int64(mean * 1000)
	res.Values["view_age_mean_us"] = int64(age * 1000)
	return res, nil
}
