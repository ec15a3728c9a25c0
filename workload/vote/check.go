package vote

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// audit is what the article and vote tables say.
type audit struct {
	articles, votes int64 // rows
	counted         int64 // sum of article.votes
	mismatched      int64 // articles whose votes ≠ their vote rows (or NULL)
	overCounted     int64 // articles whose votes are more than their vote rows, or below 0
	nonZero         int64 // articles whose votes are not 0
	maintained      bool  // every run recorded was a counter run: votes = vote rows
	// variants are the runs' variants vote_variant recorded ("unknown":
	// runs before it existed); none when no run wrote a vote.
	variants          []string
	marker            []string // what is wrong with the init marker
	orphanVotes       int64    // vote rows for no article
	badUser           int64    // vote rows whose user_id no vote draws
	badTitle          int64    // articles whose title is not init's
	firstMismatchedID int64
	// viewKind is article_votes' relkind in pg_class ("" when there is
	// none): init makes a materialized view, "m".
	viewKind string
	// viewDiffers is article_votes' definition where it is not init's;
	// viewSkipped why it was not compared (definition.go).
	viewDiffers, viewSkipped string
	// want is the number of articles init loaded (0: unknown), inRange
	// the rows of ids 1..want.
	want, inRange int64
}

// auditSQL's sum of the counters leaves out those above their vote rows
// or below 0 (overCounted: a violation after counter runs, as a counter
// other than 0 is after the others), so that a counter near 2^63 makes
// no sum overflow a bigint.
const auditSQL = `SELECT count(*),
	COALESCE(sum(a.votes) FILTER (WHERE a.votes BETWEEN 0 AND COALESCE(v.n, 0)), 0),
	count(*) FILTER (WHERE a.votes IS DISTINCT FROM 0),
	count(*) FILTER (WHERE a.votes IS DISTINCT FROM COALESCE(v.n, 0)),
	COALESCE(min(a.id) FILTER (WHERE a.votes IS DISTINCT FROM COALESCE(v.n, 0)), 0),
	count(*) FILTER (WHERE a.votes > COALESCE(v.n, 0) OR a.votes < 0 OR a.votes IS NULL),
	count(*) FILTER (WHERE a.title IS DISTINCT FROM 'Article #' || a.id)
FROM article a LEFT JOIN (SELECT article_id, count(*) AS n FROM vote GROUP BY article_id) v ON v.article_id = a.id`

// recorded says whether a run writes variant to vote_variant: a
// variant's name, or "unknown" for votes older than vote_variant.
func recorded(variant string) bool {
	switch variant {
	case "counter", "join", "matview", "unknown":
		return true
	}
	return false
}

func runAudit(ctx context.Context, t *pg.Target) (*audit, error) {
	a := &audit{}
	err := workload.ReadSnapshot(ctx, t, "check vote", errNoSchema, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, auditSQL).Scan(&a.articles, &a.counted, &a.nonZero, &a.mismatched, &a.firstMismatchedID, &a.overCounted, &a.badTitle); err != nil {
			return fmt.Errorf("auditing the articles: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM article a WHERE a.id = v.article_id)),
	count(*) FILTER (WHERE v.user_id < 0 OR v.user_id >= $1 OR v.user_id IS NULL) FROM vote v`, int64(users)).
			Scan(&a.votes, &a.orphanVotes, &a.badUser); err != nil {
			return fmt.Errorf("counting votes: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT CASE WHEN to_regclass('vote_variant') IS NULL THEN ARRAY['unknown'] ELSE (SELECT COALESCE(array_agg(variant ORDER BY variant), '{}') FROM vote_variant) END`).
			Scan(&a.variants); err != nil {
			return fmt.Errorf("reading the variants that ran: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT relkind::TEXT FROM pg_class WHERE oid = to_regclass('article_votes')), '')`).Scan(&a.viewKind); err != nil {
			return fmt.Errorf("reading what article_votes is: %w", err)
		}
		// init's settings say how many articles it loaded.
		m, problems, err := workload.CheckMarker(ctx, tx, "vote", "")
		if err != nil {
			return err
		}
		a.marker = problems
		if _, err := fmt.Sscanf(m.Settings, "articles=%d", &a.want); err != nil {
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
	if a.viewKind == "m" {
		if a.viewDiffers, a.viewSkipped, err = viewDefinition(ctx, t); err != nil {
			return nil, err
		}
	}
	a.maintained = slices.Equal(a.variants, []string{"counter"})
	return a, nil
}

func (a *audit) violations() []string {
	v := append([]string(nil), a.marker...)
	counters := slices.Contains(a.variants, "counter") || slices.Contains(a.variants, "unknown")
	switch {
	case a.maintained && a.mismatched > 0:
		v = append(v, fmt.Sprintf("%s whose votes disagree with the vote rows (first: article %d)", metrics.Count(a.mismatched, "article"), a.firstMismatchedID))
	case counters && a.overCounted > 0:
		v = append(v, fmt.Sprintf("%s whose votes are more than their vote rows, or below 0 (counter runs add one per vote row, the other variants rows only; runs: %s)",
			metrics.Count(a.overCounted, "article"), variantsOrNone(a.variants)))
	case !counters && a.nonZero > 0:
		v = append(v, fmt.Sprintf("%s whose votes are not 0, though no counter run wrote them (runs: %s)", metrics.Count(a.nonZero, "article"), variantsOrNone(a.variants)))
	}
	// A variant no run writes: a run records only the flag's values,
	// and "unknown" for votes older than vote_variant.
	var foreign []string
	for _, va := range a.variants {
		if !recorded(va) {
			foreign = append(foreign, strconv.Quote(va))
		}
	}
	if len(foreign) > 0 {
		v = append(v, fmt.Sprintf("vote_variant records %s that no run writes: %s (a run records join, counter, matview, or unknown for votes older than vote_variant)",
			metrics.Count(int64(len(foreign)), "variant"), strings.Join(foreign, ", ")))
	}
	if len(a.variants) == 0 && a.votes > 0 {
		v = append(v, fmt.Sprintf("%s, though vote_variant records no run", metrics.Count(a.votes, "vote row")))
	}
	if a.viewKind != "m" {
		v = append(v, fmt.Sprintf("article_votes is %s, where init makes a materialized view of the vote rows, which only a matview run's REFRESH rewrites", relationKind(a.viewKind)))
	}
	if a.viewDiffers != "" {
		v = append(v, fmt.Sprintf("article_votes is not the view init makes, as the server prints both: its definition is %q, where init's counts the vote rows of each article (a REFRESH writes what it says)", a.viewDiffers))
	}
	// A vote is for one of the articles init loaded, whatever the variant.
	if a.orphanVotes > 0 {
		v = append(v, metrics.Count(a.orphanVotes, "vote")+" for articles that do not exist")
	}
	if a.badUser > 0 {
		v = append(v, fmt.Sprintf("%s whose user_id is not from 0 to 2^40-1, the voters a vote draws from", metrics.Count(a.badUser, "vote")))
	}
	if a.badTitle > 0 {
		v = append(v, fmt.Sprintf("%s whose title is not the one init wrote ('Article #' and its id; no transaction writes one)", metrics.Count(a.badTitle, "article")))
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

// relationKind names a relkind of pg_class ("" for no relation).
func relationKind(k string) string {
	switch k {
	case "":
		return "missing"
	case "r":
		return "a table"
	case "v":
		return "a view"
	case "p":
		return "a partitioned table"
	case "f":
		return "a foreign table"
	}
	return fmt.Sprintf("a relation of kind %q", k)
}

// variantsOrNone names the variants that ran.
func variantsOrNone(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}

func (a *audit) lines() []workload.Line {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	counted := "not maintained (join/matview variant)"
	switch {
	case a.maintained:
		counted = fmt.Sprintf("verified: sum %d, %s mismatched", a.counted, metrics.Count(a.mismatched, "article"))
	case len(a.variants) > 1 || slices.Contains(a.variants, "unknown"):
		counted = fmt.Sprintf("at most the vote rows: sum %d (runs: %s; only counter runs count votes)", a.counted, variantsOrNone(a.variants))
	}
	lines := []workload.Line{
		{Label: "articles", Value: i(a.articles)},
		{Label: "total votes", Value: i(a.votes)},
		{Label: "votes counted per article", Value: counted},
	}
	if a.viewSkipped != "" {
		lines = append(lines, workload.Line{Label: "article_votes' definition",
			Value: fmt.Sprintf("not compared with init's: the role may not make the scratch view that prints init's (%s)", a.viewSkipped)})
	}
	return lines
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
	if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schema)); res != nil || err != nil {
		return res, err
	}
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	return a.result(append(a.lines(), workload.AfterTheFact("vote rows"))), nil
}

// runReport is the audit, the votes reconciled with the vote rows the run
// added, and, for --variant matview, the view's staleness.
func (g *gen) runReport(ctx context.Context, t *pg.Target, total *metrics.Snapshot, rs *runState) (*workload.CheckResult, error) {
	if res, err := workload.CheckColumns(ctx, t, workload.ColumnsOf(schema)); res != nil || err != nil {
		return res, err
	}
	a, err := runAudit(ctx, t)
	if err != nil {
		return nil, err
	}
	rec := workload.Reconcile(total.Ops[1], a.votes-rs.baseline)
	res := a.result(append(a.lines(), rec.Lines("vote table")...))
	rec.Into(res)
	if err := rs.ident.audit(ctx, t, rec, res); err != nil {
		return nil, err
	}
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
