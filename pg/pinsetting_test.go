package pg

import (
	"strings"
	"testing"
)

// A pinned setting reaches every session opened after it, txload's own
// and the workload's clients: it wins over the database's setting changed
// since, and over the URL's options and PGTZ's "timezone", in any case.
func TestPinSetting(t *testing.T) {
	ctx := testCtx(t)
	base := srv.NewDatabase(t)
	db := base[strings.LastIndex(base, "/")+1:]
	if i := strings.IndexByte(db, '?'); i >= 0 {
		db = db[:i]
	}
	for _, tc := range []struct{ name, url string }{
		{"plain", base},
		{"URL's options", base + "&options=-c%20TimeZone%3DAsia/Tokyo"},
		{"PGTZ's name", base + "&timezone=Asia/Tokyo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := NewTarget([]string{tc.url})
			if err != nil {
				t.Fatal(err)
			}
			admin, err := tg.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			if _, err := admin.Exec(ctx, `ALTER DATABASE "`+db+`" SET timezone = 'America/New_York'`); err != nil {
				t.Fatal(err)
			}
			tg.PinSetting("TimeZone", "Pacific/Kiritimati")
			own, err := tg.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer own.Close(ctx)
			var zone string
			if err := own.QueryRow(ctx, "SELECT current_setting('TimeZone')").Scan(&zone); err != nil || zone != "Pacific/Kiritimati" {
				t.Errorf("own session's TimeZone %q (%v), want the pinned Pacific/Kiritimati", zone, err)
			}
			raw, err := tg.ConnectRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close(ctx)
			res := raw.ExecParams(ctx, "SELECT current_setting('TimeZone')", nil, nil, nil, nil).Read()
			if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "Pacific/Kiritimati" {
				t.Errorf("raw (executor) session's TimeZone %q (%v), want the pinned Pacific/Kiritimati", res.Rows, res.Err)
			}
		})
	}
}
