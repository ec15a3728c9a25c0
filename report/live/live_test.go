package live

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txload/txload/report"
	"github.com/txload/txload/report/htmlreport"
)

// doc is a document with no runs: the page's configuration and server.
func doc() *report.Document {
	return &report.Document{Version: "test", Command: "run", Workload: "w", Config: map[string]any{"rate": "0"},
		Server: map[string]any{"dialect": "PostgreSQL", "version": "18.3"}}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// The page is drawn when a browser asks and the run has news, not
// otherwise: a browser that has the latest version gets 204, however
// often it asks; once final, the page is the one Finish drew, and Wait
// returns once the browser that was watching fetched it.
func TestPage(t *testing.T) {
	var drawn atomic.Int64
	p := New(htmlreport.Options{Version: "test"}, func() ([]*report.Document, []string, string, error) {
		drawn.Add(1)
		return []*report.Document{doc()}, []string{"w"}, "Live: interval " + strconv.FormatInt(drawn.Load(), 10), nil
	})
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()

	resp, page := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || resp.Header.Get("X-Live-Version") != "1" || !strings.Contains(page, `<p id="live-status" class="live">Live: interval 1</p>`) {
		t.Fatalf("%s, version %q:\n%.400s", resp.Status, resp.Header.Get("X-Live-Version"), page)
	}
	for _, bad := range []string{"http://", "https://", "<link", "<img", "@import"} {
		if i := strings.Index(page, bad); i >= 0 && !strings.HasPrefix(page[i:], `http://www.w3.org/2000/svg"`) {
			t.Errorf("the page has %q: it must stand alone", bad)
		}
	}
	for range 3 {
		if resp, _ := get(t, srv.URL+"/live?v=1&id=a"); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("no news: %s, want 204", resp.Status)
		}
	}
	if n := drawn.Load(); n != 1 {
		t.Errorf("drawn %d times with no news, want once", n)
	}
	p.Changed()
	p.Changed()
	resp, page = get(t, srv.URL+"/live?v=1&id=a")
	if resp.StatusCode != 200 || resp.Header.Get("X-Live-Version") != "2" || !strings.Contains(page, "Live: interval 2") {
		t.Fatalf("news: %s, version %q", resp.Status, resp.Header.Get("X-Live-Version"))
	}
	if n := drawn.Load(); n != 2 {
		t.Errorf("drawn %d times, want twice", n)
	}
	if resp, _ := get(t, srv.URL+"/favicon.ico"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("favicon: %s", resp.Status)
	}
	if resp, _ := get(t, srv.URL+"/other"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/other: %s", resp.Status)
	}

	// The run ends: the final page, and Wait until the watching browser
	// has it.
	final := doc()
	final.Workload = "final"
	if err := p.Finish([]*report.Document{final}, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	waited := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		p.Wait(5 * time.Second)
		waited <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond)
	resp, page = get(t, srv.URL+"/live?v=2&id=a")
	if resp.Header.Get("X-Live-Final") != "1" || !strings.Contains(page, "txload run final") || !strings.Contains(page, "this is its final page") {
		t.Errorf("final: %v\n%.600s", resp.Header, page)
	}
	if d := <-waited; d > 2*time.Second {
		t.Errorf("Wait took %s after the browser fetched the final page", d)
	}
	p.Changed()
	if _, again := get(t, srv.URL+"/"); !strings.Contains(again, "txload run final") || drawn.Load() != 2 {
		t.Errorf("a final page drawn again from the run's source")
	}
}

// A run nobody watched: its final page is not drawn (it would cost the
// run a drawing for no one), and a browser that comes late gets the
// status.
func TestPageNobodyAskedFor(t *testing.T) {
	var drawn atomic.Int64
	p := New(htmlreport.Options{}, func() ([]*report.Document, []string, string, error) {
		drawn.Add(1)
		return []*report.Document{doc()}, []string{"w"}, "running", nil
	})
	p.Changed()
	if err := p.Finish([]*report.Document{doc()}, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	resp, page := get(t, srv.URL+"/")
	if drawn.Load() != 0 || resp.Header.Get("X-Live-Final") != "1" || !strings.Contains(page, "The run has ended: no page was asked for while it ran.") {
		t.Errorf("drawn %d times; %v\n%s", drawn.Load(), resp.Header, page)
	}
}
