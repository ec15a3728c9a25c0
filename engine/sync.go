package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/txload/txload/workload"
)

// syncDrive runs workers that complete synchronously, one goroutine each,
// as one group: the sessions are called under a lock, and in open loop only
// one idle client at a time waits for the next arrival (the head of the
// line), so an arrival wakes one goroutine, not all of them.
func (r *run) syncDrive(ctx context.Context, load *workload.QueryLoad, ready func(time.Time)) error {
	g := r.groups[0]
	workers := make([]workload.Worker, 0, len(g.clients))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, w := range workers {
			w.Close(cctx)
		}
	}()
	for _, c := range g.clients {
		w, err := load.NewWorker(ctx, c.id, c)
		if err != nil {
			return fmt.Errorf("starting client %d: %w", c.id, err)
		}
		workers = append(workers, w)
	}
	ready(time.Now())
	d := &syncDriver{r: r, ctx: ctx, head: make(chan struct{}, 1)}
	d.head <- struct{}{}
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.client(g.clients[i], w)
		}()
	}
	wg.Wait()
	return nil
}

type syncDriver struct {
	r    *run
	ctx  context.Context
	mu   sync.Mutex    // the group's sessions are called under it
	head chan struct{} // held by the idle client that waits for the next arrival
}

func (d *syncDriver) client(c *client, w workload.Worker) {
	step := d.idle(c)
	for {
		switch step.Kind {
		case workload.Stop:
			return
		case workload.Wait:
			step = d.idle(c)
		case workload.Start:
			err := w.Do(d.ctx, step.Op, step.Attempt)
			d.mu.Lock()
			step = c.Done(time.Now(), err, workload.StatementOf(err))
			d.mu.Unlock()
		case workload.Reconnect:
			if !d.sleep(step.At, 0) {
				d.mu.Lock()
				c.giveUp(time.Now())
				d.mu.Unlock()
				return
			}
			err := w.Reset(d.ctx)
			d.mu.Lock()
			step = c.Connected(time.Now(), err)
			d.mu.Unlock()
		}
	}
}

// idle waits at the head of the line until the session has something to do.
func (d *syncDriver) idle(c *client) workload.Step {
	select {
	case <-d.head:
	case <-d.r.stop:
		return workload.Step{Kind: workload.Stop}
	case <-d.ctx.Done():
		return workload.Step{Kind: workload.Stop}
	}
	defer func() { d.head <- struct{}{} }()
	for {
		d.mu.Lock()
		step := c.Next(time.Now())
		d.mu.Unlock()
		if step.Kind != workload.Wait {
			return step
		}
		if !d.sleep(step.At, d.r.cfg.Spin) {
			return workload.Step{Kind: workload.Stop}
		}
	}
}

// sleep waits until at, yielding in a loop for the last spin; false when
// the run stopped first.
func (d *syncDriver) sleep(at time.Time, spin time.Duration) bool {
	if wait := time.Until(at); wait > spin {
		t := time.NewTimer(wait - spin)
		defer t.Stop()
		select {
		case <-t.C:
		case <-d.r.stop:
			return false
		case <-d.ctx.Done():
			return false
		}
	}
	for time.Now().Before(at) {
		if d.r.stopped() {
			return false
		}
		runtime.Gosched()
	}
	return true
}
