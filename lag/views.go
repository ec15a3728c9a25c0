package lag

import (
	"context"
	"sort"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
)

// Views samples what the servers say of the replication themselves, to be
// read beside txload's own figure: pg_stat_replication on the source
// (write, flush and replay lag of each WAL sender: physical standbys and
// logical subscribers alike; NULL while idle) and pg_stat_subscription on
// the destination (for each subscription, the delay between the source
// sending its last message and the destination receiving it, on two
// servers' clocks). A view the server lacks (CockroachDB) or hides is
// skipped.
type Views struct {
	Source, Dest *pg.Target
	// Every is the sampling period (0 = 100 ms).
	Every time.Duration

	mu      sync.Mutex
	senders map[string]*SenderStats
	subs    map[string]*SubscriptionStats
	last    ViewSample
}

// SenderStats are the samples of one pg_stat_replication row, by
// application_name (µs).
type SenderStats struct {
	Name                 string
	Write, Flush, Replay *hdr.Histogram
	// Behind is how far replay_lsn was behind the source's current WAL
	// position, in bytes: a figure that exists even when the lag columns
	// are NULL (as they mostly are for a logical subscriber).
	Behind *hdr.Histogram
	// Samples counts the samples that found the sender; Idle those whose
	// replay_lag was NULL (nothing to replay).
	Samples, Idle int64
}

// SubscriptionStats are the samples of one pg_stat_subscription row (µs).
type SubscriptionStats struct {
	Name string
	// Delay is last_msg_receipt_time − last_msg_send_time.
	Delay   *hdr.Histogram
	Samples int64
}

// ViewSample is the latest sample, for progress lines: the largest replay
// lag of any sender and the largest message delay of any subscription, -1
// when there was none (NULL, or no such view); the most bytes any sender's
// replay was behind, -1 when unknown.
type ViewSample struct {
	Replay, Delay time.Duration
	Behind        int64
}

// Run samples until ctx ends.
func (v *Views) Run(ctx context.Context) {
	every := v.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	v.mu.Lock()
	v.senders, v.subs = map[string]*SenderStats{}, map[string]*SubscriptionStats{}
	v.last = ViewSample{Replay: -1, Delay: -1, Behind: -1}
	v.mu.Unlock()
	var src, dst *pgx.Conn
	defer func() {
		for _, c := range []*pgx.Conn{src, dst} {
			if c != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	srcOK, dstOK := v.Source != nil, v.Dest != nil
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s := ViewSample{Replay: -1, Delay: -1, Behind: -1}
		if srcOK {
			srcOK = v.sample(ctx, &src, v.Source, v.senderSample(&s))
		}
		if dstOK {
			dstOK = v.sample(ctx, &dst, v.Dest, v.subscriptionSample(&s))
		}
		v.mu.Lock()
		v.last = s
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample runs f on a connection to t, connecting first if needed. It says
// false when the view cannot be read at all (missing, not granted), to stop
// asking; a lost connection is retried at the next sample.
func (v *Views) sample(ctx context.Context, conn **pgx.Conn, t *pg.Target, f func(*pgx.Conn) error) bool {
	if *conn == nil {
		c, err := t.Connect(ctx)
		if err != nil {
			return true
		}
		*conn = c
	}
	err := f(*conn)
	if err == nil || ctx.Err() != nil {
		return true
	}
	if pg.IsConnectionError(err) || (*conn).IsClosed() {
		(*conn).Close(context.WithoutCancel(ctx))
		*conn = nil
		return true
	}
	_, fatal := pg.Classify(err)
	return !fatal
}

func (v *Views) senderSample(s *ViewSample) func(*pgx.Conn) error {
	return func(conn *pgx.Conn) error {
		rows, err := conn.Query(context.Background(), `SELECT application_name,
			(EXTRACT(EPOCH FROM write_lag) * 1e6)::bigint, (EXTRACT(EPOCH FROM flush_lag) * 1e6)::bigint,
			(EXTRACT(EPOCH FROM replay_lag) * 1e6)::bigint,
			CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint END
			FROM pg_stat_replication`)
		if err != nil {
			return err
		}
		defer rows.Close()
		v.mu.Lock()
		defer v.mu.Unlock()
		for rows.Next() {
			var name string
			var w, f, r, b *int64
			if err := rows.Scan(&name, &w, &f, &r, &b); err != nil {
				return err
			}
			st := v.senders[name]
			if st == nil {
				st = &SenderStats{Name: name, Write: metrics.NewHistogram(), Flush: metrics.NewHistogram(), Replay: metrics.NewHistogram(), Behind: metrics.NewHistogram()}
				v.senders[name] = st
			}
			st.Samples++
			for _, p := range []struct {
				h *hdr.Histogram
				v *int64
			}{{st.Write, w}, {st.Flush, f}, {st.Replay, r}, {st.Behind, b}} {
				if p.v != nil {
					_ = p.h.RecordValue(clamp(p.h, *p.v))
				}
			}
			if r == nil {
				st.Idle++
			} else {
				s.Replay = max(s.Replay, time.Duration(*r)*time.Microsecond)
			}
			if b != nil {
				s.Behind = max(s.Behind, *b)
			}
		}
		return rows.Err()
	}
}

func (v *Views) subscriptionSample(s *ViewSample) func(*pgx.Conn) error {
	return func(conn *pgx.Conn) error {
		rows, err := conn.Query(context.Background(), `SELECT subname,
			(EXTRACT(EPOCH FROM last_msg_receipt_time - last_msg_send_time) * 1e6)::bigint
			FROM pg_stat_subscription WHERE relid IS NULL AND pid IS NOT NULL`)
		if err != nil {
			return err
		}
		defer rows.Close()
		v.mu.Lock()
		defer v.mu.Unlock()
		for rows.Next() {
			var name string
			var d *int64
			if err := rows.Scan(&name, &d); err != nil {
				return err
			}
			st := v.subs[name]
			if st == nil {
				st = &SubscriptionStats{Name: name, Delay: metrics.NewHistogram()}
				v.subs[name] = st
			}
			st.Samples++
			if d != nil {
				_ = st.Delay.RecordValue(clamp(st.Delay, *d))
				s.Delay = max(s.Delay, time.Duration(*d)*time.Microsecond)
			}
		}
		return rows.Err()
	}
}

func clamp(h *hdr.Histogram, v int64) int64 { return min(max(v, 0), h.HighestTrackableValue()) }

// Last is the latest sample.
func (v *Views) Last() ViewSample {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.last
}

// Senders returns the WAL senders sampled, by name. Call it after Run.
func (v *Views) Senders() []*SenderStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]*SenderStats, 0, len(v.senders))
	for _, s := range v.senders {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subscriptions returns the subscriptions sampled, by name. Call it after Run.
func (v *Views) Subscriptions() []*SubscriptionStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]*SubscriptionStats, 0, len(v.subs))
	for _, s := range v.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
