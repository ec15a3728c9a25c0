package vote

import (
	"context"
	"strconv"
	"testing"

	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
)

// The sum of a million votes' identities, as a run takes it before it
// starts (in the client, over COPY: the seed stays out of the server)
// and as its audit takes it after (in the server): the price of keeping
// the seed out of a statement log until the audit.
//
//	go test -run '^$' -bench BenchmarkIdentitySum -benchtime 5x ./workload/vote/
func BenchmarkIdentitySum(b *testing.B) {
	const rows = 1_000_000
	url := pgtest.OwnServer(b).URL() // the package's tests share theirs from outside it
	ctx := context.Background()
	conn := pgtest.Conn(b, url)
	for _, sql := range []string{`CREATE TABLE vote (article_id int NOT NULL, user_id int NOT NULL)`,
		`INSERT INTO vote SELECT i % 1000 + 1, i FROM generate_series(1, ` + strconv.Itoa(rows) + `) i`, `VACUUM ANALYZE vote`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	const seed = 1234567890123456789
	var server, client uint64
	b.Run("server", func(b *testing.B) {
		for b.Loop() {
			var s string
			if err := conn.QueryRow(ctx, `SELECT `+identitySQL+` FROM vote`, strconv.FormatUint(seed, 10)).Scan(&s); err != nil {
				b.Fatal(err)
			}
			var err error
			if server, err = workload.HashSum(s, "the vote table"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	b.Run("client", func(b *testing.B) {
		for b.Loop() {
			var n int64
			var err error
			if client, n, err = workload.CopyHashSum(ctx, conn.PgConn(), seed, identityCopy, nil); err != nil || n != rows {
				b.Fatal(n, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	if server != client {
		b.Fatalf("the server's sum %d, the client's %d", server, client)
	}
}
