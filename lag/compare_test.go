package lag

import (
	"context"
	"reflect"
	"testing"

	"github.com/txload/txload/internal/pgtest"
)

// CompareTable finds exactly the rows that differ, by key, whatever the
// table's shape; equal tables compare equal.
func TestCompareTable(t *testing.T) {
	t.Parallel()
	const keyed = `CREATE TABLE t (id INT PRIMARY KEY, v TEXT, n NUMERIC, at TIMESTAMPTZ);
		INSERT INTO t SELECT g, 'row ' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE g * 1.5 END, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 minute'
		FROM generate_series(1, 5000) g`
	for _, tc := range []struct {
		name   string
		create string
		pair   Pair
		change []string // on the destination
		want   Diff
	}{
		{name: "equal", create: keyed, pair: Pair{"t", "t"},
			want: Diff{Key: []string{"id"}, SourceRows: 5000, DestRows: 5000, Ranges: 256}},
		{name: "deleted, updated, inserted", create: keyed, pair: Pair{"t", "t"},
			change: []string{"DELETE FROM t WHERE id = 42", "UPDATE t SET v = 'changed' WHERE id = 7", "UPDATE t SET n = NULL WHERE id = 8",
				"INSERT INTO t VALUES (99999, 'new', 1, now())"},
			want: Diff{Key: []string{"id"}, SourceRows: 5000, DestRows: 5000, Missing: 1, Extra: 1, Differing: 2,
				MissingKeys: []string{"id=42"}, ExtraKeys: []string{"id=99999"}, DifferingKeys: []string{"id=7", "id=8"}, Ranges: 256}},
		{name: "mapped name, a missing column", create: keyed + "; CREATE TABLE t2 AS SELECT id, v, n FROM t; ALTER TABLE t2 ADD PRIMARY KEY (id)",
			pair: Pair{"t", "t2"},
			want: Diff{Pair: Pair{"t", "t2"}, Key: []string{"id"}, SourceRows: 5000, DestRows: 5000, Ranges: 256, MissingColumns: []string{"at"}}},
		{name: "composite key, small table", create: "CREATE TABLE c (a INT, b TEXT, v INT, PRIMARY KEY (a, b)); INSERT INTO c SELECT g % 10, 'k' || g, g FROM generate_series(1, 100) g",
			pair: Pair{"c", "c"}, change: []string{"UPDATE c SET v = -1 WHERE a = 3 AND b = 'k13'", "DELETE FROM c WHERE a = 5 AND b = 'k5'"},
			want: Diff{Key: []string{"a", "b"}, SourceRows: 100, DestRows: 99, Missing: 1, Differing: 1,
				MissingKeys: []string{"a=5,b=k5"}, DifferingKeys: []string{"a=3,b=k13"}, Ranges: 1}},
		{name: "no key: rows as a multiset", create: "CREATE TABLE h (x INT, y TEXT); INSERT INTO h SELECT g % 100, 'y' FROM generate_series(1, 1000) g",
			pair: Pair{"h", "h"}, change: []string{"INSERT INTO h VALUES (7, 'y')", "DELETE FROM h WHERE ctid = (SELECT min(ctid) FROM h WHERE x = 9)"},
			want: Diff{SourceRows: 1000, DestRows: 1000, Missing: 1, Extra: 1,
				MissingKeys: []string{"v9|vy"}, ExtraKeys: []string{"v7|vy"}, Ranges: 16}},
		{name: "partitioned", create: `CREATE TABLE p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id);
			CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (1001); CREATE TABLE p2 PARTITION OF p FOR VALUES FROM (1001) TO (2001);
			INSERT INTO p SELECT g, g FROM generate_series(1, 2000) g`,
			pair: Pair{"p", "p"}, change: []string{"DELETE FROM p2 WHERE id = 1500"},
			want: Diff{Key: []string{"id"}, SourceRows: 2000, DestRows: 1999, Missing: 1, MissingKeys: []string{"id=1500"}, Ranges: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, dst := srv.NewDatabase(t), srv.NewDatabase(t)
			exec(t, src, tc.create)
			exec(t, dst, tc.create)
			exec(t, dst, tc.change...)
			d, err := CompareTable(context.Background(), pgtest.Conn(t, src), pgtest.Conn(t, dst), tc.pair, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Pair = tc.pair
			if !want.OK() {
				want.DifferingRanges = d.DifferingRanges // checked below
			}
			if !reflect.DeepEqual(*d, want) {
				t.Errorf("got  %+v\nwant %+v", *d, want)
			}
			if d.OK() != (len(tc.change) == 0 && len(want.MissingColumns) == 0) {
				t.Errorf("OK() = %v", d.OK())
			}
			if n := want.Missing + want.Extra + want.Differing; n > 0 && (d.DifferingRanges == 0 || int64(d.DifferingRanges) > n) {
				t.Errorf("%d differing ranges for %d differing rows", d.DifferingRanges, n)
			}
		})
	}
}

// Gaps, repeats and strangers among the markers, by writer and seq.
func TestCompareMarkers(t *testing.T) {
	t.Parallel()
	src, dst := srv.NewDatabase(t), srv.NewDatabase(t)
	ctx := context.Background()
	sc, dc := pgtest.Conn(t, src), pgtest.Conn(t, dst)
	if err := CreateSource(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if err := CreateDest(ctx, dc, Table); err != nil {
		t.Fatal(err)
	}
	exec(t, src, "INSERT INTO txload_lag_marker SELECT w, s, now() FROM generate_series(3, 4) w, generate_series(1, 5) s",
		"INSERT INTO txload_lag_marker VALUES (1, 1, now()), (9, 1, now())") // other runs' writers
	exec(t, dst, "INSERT INTO txload_lag_marker SELECT w, s, now() FROM generate_series(3, 4) w, generate_series(1, 5) s WHERE (w, s) <> (3, 3)",
		"INSERT INTO txload_lag_marker VALUES (4, 2, now()), (4, 2, now()), (4, 7, now()), (1, 1, now()), (1, 1, now())")
	m, err := CompareMarkers(ctx, sc, dc, Table, 3, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := MarkerDiff{Source: 10, Dest: 12, Gaps: 1, Repeats: 2, Extra: 1,
		GapKeys: []string{"writer 3 seq 3"}, RepeatKeys: []string{"writer 4 seq 2"}, ExtraKeys: []string{"writer 4 seq 7"}}
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("got  %+v\nwant %+v", *m, want)
	}
	if m.OK() {
		t.Error("OK() with gaps")
	}
}
