package pgio

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/pg"
)

// pg_stat_statements keeps at most pg_stat_statements.max entries and
// evicts the least used to make room: on a server with many statements a
// pgio statement's entry can go mid-run, taking its calls and blocks with
// it. The sampler reads the evictions (pg_stat_statements_info.dealloc);
// a run that saw one says so and takes its headline from pg_stat_database.
func TestSamplerSeesEvictions(t *testing.T) {
	ctx := t.Context()
	s := pgtest.OwnServer(t, "pg_stat_statements.max=100") // 100 is the least the setting allows
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sampler, err := NewSampler(ctx, conn, pg.PostgreSQL)
	if err != nil || !sampler.Stmts {
		t.Fatalf("sampler: %v; pg_stat_statements read: %v (%s)", err, sampler != nil && sampler.Stmts, sampler.StmtsWhy)
	}
	before, err := sampler.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := sampler.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := quiet.Sub(before).Dealloc; d != 0 {
		t.Fatalf("%d evictions between two samples with nothing run", d)
	}
	// 300 distinct statements (constants do not tell statements apart, the
	// number of columns does): three times what the view may keep.
	for i := range 300 {
		if _, err := conn.Exec(ctx, "SELECT "+strings.Repeat("1, ", i)+"1"); err != nil {
			t.Fatal(err)
		}
	}
	after, err := sampler.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := after.Sub(before)
	if got.Dealloc <= 0 {
		t.Fatalf("%d evictions after 300 distinct statements with pg_stat_statements.max=100", got.Dealloc)
	}

	// The result of such a period.
	res := &Result{Dialect: pg.PostgreSQL, DB: true, Stmts: true, Database: "d", Counters: got, Elapsed: 1e9}
	res.Kinds = [numKinds]KindStats{newKindStats(), newKindStats()}
	res.Counters.DB.Hit, res.Counters.Stmts[Select].Hit = 1000, 10
	if h := res.Headline(); !strings.Contains(h, "LIOPS 1000/s") || !strings.Contains(h, "pg_stat_database of d") {
		t.Errorf("headline after evictions: %s", h)
	}
	if v := res.Values(); v["stmt_dealloc"] != got.Dealloc || v["liops"] != 1000 {
		t.Errorf("stmt_dealloc %d, liops %d", v["stmt_dealloc"], v["liops"])
	}
	res.Counters.Dealloc = 0
	if h := res.Headline(); !strings.Contains(h, "LIOPS 10/s") || !strings.Contains(h, "pg_stat_statements") {
		t.Errorf("headline without evictions: %s", h)
	}
}
