// Package live serves a run's HTML report while the run goes (txload's
// --live, and the --metrics-addr server's /): the page package htmlreport
// draws for --html, from the documents of the run so far, with a status
// line and a script that asks for it again twice a second. The page is
// drawn again only when the run has news (Changed: a progress interval
// ended) and a browser asks: a run nobody watches draws nothing, and one
// watched by many pages draws once per interval. Once the run ends, Finish
// draws its final page from the documents --html is written from, and
// Wait gives the pages that were watching the time to fetch it.
package live

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// Source gives the documents of the run so far, their names, and a line
// saying where the run is. It is called from the server's goroutines, one
// call at a time, while the run goes on: it must be safe for that.
type Source func() (docs []*report.Document, names []string, status string, err error)

// statusMark stands for the status line in a drawn page: the line is put
// in when the page is sent, so that it can change (the run ended) without
// drawing the page again.
const statusMark = "\x00live-status\x00"

// Page is a run's live page.
type Page struct {
	opts   htmlreport.Options
	source Source

	draw  sync.Mutex       // held while drawing: one drawing at a time
	cache htmlreport.Cache // the runs' windows drawn, for the next drawing (under draw)

	mu       sync.Mutex
	news     uint64 // bumped by Changed
	drawnAt  uint64 // news when html was drawn
	version  uint64 // html's, bumped at each drawing
	html     []byte // the page last drawn, with statusMark for its status
	status   string
	final    bool
	watchers map[string]watcher
	asked    bool // a browser asked for the page
}

// watcher is a browser's page asking for news: when it last asked, and
// the version it has.
type watcher struct {
	last    time.Time
	version uint64
}

// New returns a page drawn from source with opts (the title, names and
// version the --html page has).
func New(opts htmlreport.Options, source Source) *Page {
	return &Page{opts: opts, source: source, watchers: map[string]watcher{}, status: "starting"}
}

// Changed says the run has news: the next browser that asks gets the page
// drawn again. It costs nothing else, and may be called on a nil page.
func (p *Page) Changed() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.news++
	p.mu.Unlock()
}

// Finish draws the run's final page from docs, the documents --html is
// written from: the page every browser gets from now on, marked final.
// A page no browser asked for is not drawn: it is only marked final.
func (p *Page) Finish(docs []*report.Document, names []string) error {
	if p == nil {
		return nil
	}
	p.draw.Lock()
	defer p.draw.Unlock()
	p.mu.Lock()
	asked := p.asked
	p.mu.Unlock()
	if !asked {
		p.End("The run has ended: no page was asked for while it ran.")
		return nil
	}
	b, err := p.render(docs, names, true)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.final = true
	if err != nil {
		p.status = "The run has ended, but its final page could not be drawn (" + err.Error() + "): this is its last state."
		return err
	}
	p.html, p.version = b, p.version+1
	p.status = "The run has ended: this is its final page, the one --html writes."
	return nil
}

// End marks the page final as it is, with status saying why (a run that
// ended with no document to draw).
func (p *Page) End(status string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.final {
		p.final, p.status = true, status
		if p.html != nil {
			p.version++ // the status changed: the browsers fetch it
		}
	}
}

// Wait waits, at most max, until every browser that asked in the last 3
// seconds has the final page; it returns at once on a page not final.
func (p *Page) Wait(max time.Duration) {
	if p == nil {
		return
	}
	for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p.watched() == 0 {
			return
		}
	}
}

// watched is the number of browsers that asked in the last 3 seconds and
// lack the final page.
func (p *Page) watched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.final {
		return 0
	}
	n := 0
	for _, w := range p.watchers {
		if time.Since(w.last) < 3*time.Second && w.version != p.version {
			n++
		}
	}
	return n
}

// render draws docs as the live page.
func (p *Page) render(docs []*report.Document, names []string, final bool) ([]byte, error) {
	p.mu.Lock()
	version := p.version + 1
	p.mu.Unlock()
	if len(docs) == 0 {
		return nil, fmt.Errorf("live page: nothing measured yet")
	}
	opts := p.opts
	opts.Names = names
	opts.Live = &htmlreport.Live{Version: version, Status: statusMark, Final: final}
	opts.Cache = &p.cache
	var b bytes.Buffer
	if err := htmlreport.Write(&b, docs, opts); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// current is the page to send: drawn again first when the run has news
// and the page is not final. A drawing that fails keeps the page before
// it; the first one's error is the page.
func (p *Page) current() (page []byte, version uint64, final bool) {
	p.draw.Lock()
	defer p.draw.Unlock()
	p.mu.Lock()
	news, stale := p.news, !p.final && (p.news != p.drawnAt || p.html == nil)
	p.mu.Unlock()
	if stale {
		docs, names, status, err := p.source()
		var b []byte
		if err == nil {
			b, err = p.render(docs, names, false)
		}
		p.mu.Lock()
		p.drawnAt = news
		switch {
		case err == nil:
			p.html, p.version, p.status = b, p.version+1, status
		case p.html == nil:
			p.status = status
			p.html = bare(err.Error())
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.html == nil { // final before anything was drawn
		p.html = bare("")
	}
	return bytes.Replace(p.html, []byte(statusMark), []byte(html.EscapeString(p.status)), 1), p.version, p.final
}

// bare is a page of the status line and a note, for when there is no
// report to draw.
func bare(note string) []byte {
	return []byte(fmt.Sprintf("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>txload: live</title></head><body><p id=\"live-status\">%s</p><p>%s</p></body></html>\n",
		statusMark, html.EscapeString(note)))
}

// Handler serves the page at / and its news at /live?v=N&id=PAGE: 204 when
// the page is still version N, else the page; X-Live-Version is its
// version, X-Live-Final says the run has ended.
func (p *Page) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		var have uint64
		switch r.URL.Path {
		case "/favicon.ico": // asked by every browser: none, and no error
			w.WriteHeader(http.StatusNoContent)
			return
		case "/":
			have = 0
		case "/live":
			v, err := strconv.ParseUint(r.URL.Query().Get("v"), 10, 64)
			if err != nil {
				http.Error(w, "live?v=VERSION&id=PAGE", http.StatusBadRequest)
				return
			}
			have = v
		default:
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		p.asked = true
		p.mu.Unlock()
		page, version, final := p.current()
		if id := r.URL.Query().Get("id"); id != "" {
			p.mu.Lock()
			if len(p.watchers) > 1000 { // pages that went away: forget them
				clear(p.watchers)
			}
			p.watchers[id] = watcher{last: time.Now(), version: version}
			p.mu.Unlock()
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Live-Version", strconv.FormatUint(version, 10))
		if final {
			h.Set("X-Live-Final", "1")
		}
		if have == version && r.URL.Path == "/live" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
}
