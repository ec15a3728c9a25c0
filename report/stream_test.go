package report_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/report"
)

// inMemory is doc with its spooled intervals and points read back into
// Intervals and Points: the document as a run that kept them in memory
// made it.
func inMemory(t *testing.T, doc *report.Document) *report.Document {
	t.Helper()
	out := *doc
	out.Runs = append([]report.RunDoc(nil), doc.Runs...)
	for i := range out.Runs {
		rd := &out.Runs[i]
		if rd.Spooled == nil {
			continue
		}
		var ivs []report.IntervalDoc
		if err := rd.EachInterval(func(_ int, iv *report.IntervalDoc) error { ivs = append(ivs, *iv); return nil }); err != nil {
			t.Fatal(err)
		}
		rd.Intervals, rd.Spooled = ivs, nil
	}
	out.Series = append([]report.SeriesDoc(nil), doc.Series...)
	for i := range out.Series {
		sd := &out.Series[i]
		var pts []report.SeriesPoint
		if err := sd.EachPoint(func(_ int, p *report.SeriesPoint) error { pts = append(pts, *p); return nil }); err != nil {
			t.Fatal(err)
		}
		sd.Points, sd.Spooled = pts, nil
	}
	return &out
}

// encodingJSON is doc as encoding/json writes it, indented, with
// everything in memory: what WriteJSON wrote before it streamed.
func encodingJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// streamedDoc is a document of two runs whose intervals are spooled, one
// of them with a drain, and a figure whose points are spooled.
func streamedDoc(t *testing.T) *report.Document {
	t.Helper()
	a := fakeRun(t, 1, time.Unix(5000, 0), 7, []time.Duration{0, 3 * time.Millisecond})
	b := fakeRun(t, 2, time.Unix(5000, 0), 3, nil)
	doc := a
	doc.Runs = append(doc.Runs, b.Runs[0])
	doc.Runs[0].Labels = map[string]string{"isolation": "rc"}
	doc.Runs[1].Labels = map[string]string{"isolation": "serializable"}
	drain := report.IntervalDoc{Start: time.Unix(5007, 0), End: time.Unix(5007, 4000000), Ops: []report.IntervalOpDoc{{Name: "a", OK: 2}, {Name: "b"}}}
	doc.Runs[1].Drain = &drain
	points, err := report.NewPointSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { points.Close() })
	for i := range 5 {
		if err := points.Append(&report.SeriesPoint{At: float64(i) + 0.5, Values: []float64{float64(i * 100), 1e6 / 3, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	doc.Series = []report.SeriesDoc{{Title: "lag", Unit: "us", Lines: []string{"p50", "max", "oldest"}, Spooled: points,
		Events: []report.SeriesEvent{{At: 2.5, Label: "fault"}}},
		{Title: "kept in memory", Lines: []string{"x"}, Points: []report.SeriesPoint{{At: 1, Values: []float64{2}}}}}
	doc.RunID = "0123"
	doc.Tables = []report.TableDoc{{Title: "t", Rows: [][]string{{"a", "1"}}}}
	return doc
}

// The document of a run whose intervals were spooled is, byte for byte,
// the one encoding/json writes of the same run with its intervals in
// memory (as WriteJSON did before it streamed), for a document and for
// one embedded in another (lag's); read back, it holds the same values.
func TestStreamedDocumentIsTheInMemoryOne(t *testing.T) {
	doc := streamedDoc(t)
	mem := inMemory(t, doc)
	if len(mem.Runs[0].Intervals) != 7 || len(mem.Runs[1].Intervals) != 3 || len(mem.Series[0].Points) != 5 {
		t.Fatalf("in memory: %d, %d intervals, %d points", len(mem.Runs[0].Intervals), len(mem.Runs[1].Intervals), len(mem.Series[0].Points))
	}
	var streamed bytes.Buffer
	if err := report.WriteJSON(&streamed, doc); err != nil {
		t.Fatal(err)
	}
	want := encodingJSON(t, mem)
	if !bytes.Equal(streamed.Bytes(), want) {
		t.Fatalf("the streamed document differs from encoding/json's:\n%s\nwant\n%s", streamed.Bytes(), want)
	}
	// Structurally, too: the same values under the same keys.
	var got, exp any
	if err := json.Unmarshal(streamed.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatal("the streamed document's values differ")
	}

	// Embedded, with a field after the document's own.
	type lagDoc struct {
		report.Document
		Lag map[string]int `json:"lag"`
	}
	var emb bytes.Buffer
	if err := report.WriteJSONOf(&emb, &lagDoc{Document: *doc, Lag: map[string]int{"x": 1}}, doc); err != nil {
		t.Fatal(err)
	}
	if want := encodingJSON(t, &lagDoc{Document: *mem, Lag: map[string]int{"x": 1}}); !bytes.Equal(emb.Bytes(), want) {
		t.Fatalf("embedded: the streamed document differs from encoding/json's:\n%s\nwant\n%s", emb.Bytes(), want)
	}

	// Read back, its intervals are the run's.
	back, err := report.ReadJSON(bytes.NewReader(streamed.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if again := encodingJSON(t, inMemory(t, back)); !bytes.Equal(again, want) {
		t.Fatalf("read back and written again, the document differs:\n%s", again)
	}
}

// A spooled run with no interval has no "intervals", as one in memory.
func TestStreamedNoIntervals(t *testing.T) {
	doc := fakeRun(t, 1, time.Unix(6000, 0), 0, nil)
	var b bytes.Buffer
	if err := report.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"intervals"`) || !bytes.Equal(b.Bytes(), encodingJSON(t, inMemory(t, doc))) {
		t.Fatalf("%s", b.String())
	}
}

// A document read from a file: every byte goes through tee, its intervals
// stay in the file and are read again from there, one at a time.
func TestReadJSONAtFromFile(t *testing.T) {
	doc := streamedDoc(t)
	path := filepath.Join(t.TempDir(), "doc.json")
	var b bytes.Buffer
	if err := report.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	back, err := report.ReadJSONAt(f, int64(b.Len()), h)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b.Bytes()); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Error("tee did not see the whole file")
	}
	for r := range back.Runs {
		if back.Runs[r].Intervals != nil || back.Runs[r].Spooled == nil {
			t.Errorf("run %d: intervals in memory, not left in the file", r)
		}
	}
	// Twice: each visit reads them from the file again.
	for range 2 {
		var total int64
		err := back.Runs[0].EachInterval(func(_ int, iv *report.IntervalDoc) error {
			total += iv.Ops[0].OK
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if total != back.Runs[0].Ops[0].OK {
			t.Errorf("the intervals hold %d ok, the run %d", total, back.Runs[0].Ops[0].OK)
		}
	}
}

// What a document says that cannot be, in an interval, is refused as it
// is read, with the place it is at; so is a document cut short.
func TestReadJSONRefusesIntervals(t *testing.T) {
	var good bytes.Buffer
	if err := report.WriteJSON(&good, inMemory(t, fakeRun(t, 1, time.Unix(7000, 0), 3, nil))); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(good.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	mangle := func(change func(ivs []any)) []byte {
		var d map[string]any
		_ = json.Unmarshal(good.Bytes(), &d)
		change(d["runs"].([]any)[0].(map[string]any)["intervals"].([]any))
		b, _ := json.Marshal(d)
		return b
	}
	op := func(iv any) map[string]any { return iv.(map[string]any)["operations"].([]any)[0].(map[string]any) }
	// In txload's order, the run's operations before its intervals.
	ordered := inMemory(t, fakeRun(t, 1, time.Unix(7000, 0), 3, nil))
	ordered.Runs[0].Intervals[1].Ops[1].Name = "z"
	var renamed bytes.Buffer
	if err := report.WriteJSON(&renamed, ordered); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"negative", mangle(func(ivs []any) { op(ivs[1])["ok"] = -3 }), "runs[0].intervals[1].operations[0].ok: -3 is negative"},
		{"class", mangle(func(ivs []any) { op(ivs[2])["failed"] = map[string]any{"gremlins": 1} }), `runs[0].intervals[2].operations[0].failed: unknown failure class "gremlins"`},
		{"order", mangle(func(ivs []any) { ivs[1], ivs[2] = ivs[2], ivs[1] }), "runs[0].intervals[2]: starts at 1970-01-01T01:56:41Z, before the interval before it (1970-01-01T01:56:42Z)"},
		{"operation", mangle(func(ivs []any) { op(ivs[0])["name"] = "z" }), `runs[0].intervals[0]: operation "z" where the run has "a"`},
		{"later operation", mangle(func(ivs []any) { op(ivs[2])["name"] = "z" }), `runs[0].intervals[2]: operation "z" where the run has "a"`},
		{"operation in order", renamed.Bytes(), `runs[0].intervals[1]: operation "z" where the run has "b"`},
		{"time", mangle(func(ivs []any) { ivs[0].(map[string]any)["end"] = "yesterday" }), "reading a txload JSON document: runs[0].intervals[0]: parsing time"},
		{"cut short", good.Bytes()[:good.Len()/2], "reading a txload JSON document: unexpected end of JSON input"},
		{"not an object", []byte(`{"runs": [{"intervals": [1]}]}`), "reading a txload JSON document: runs[0].intervals[0]: json: cannot unmarshal number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := report.ReadJSON(bytes.NewReader(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// A spool holds what was appended, read again from its first value by each
// Open, as many times as asked; once closed, it is gone.
func TestSpool(t *testing.T) {
	dir := t.TempDir()
	ivs, err := report.NewIntervals(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := metrics.NewRegistry([]string{"op"}, time.Unix(0, 0))
	r := g.NewRecorder()
	for i := range 100 {
		r.Success(0, true, time.Duration(i+1)*time.Millisecond, time.Millisecond, 0, 1)
		iv, err := g.Tick(time.Unix(int64(i+1), 0))
		if err != nil {
			t.Fatal(err)
		}
		ivs.Add(iv, time.Unix(int64(i+1), 0), i < 3)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the spool's file is in its directory: %v", left)
	}
	rd := report.RunDoc{Ops: []report.OpDoc{{Name: "op"}}, Spooled: ivs}
	for range 2 {
		n := 0
		err := rd.EachInterval(func(k int, iv *report.IntervalDoc) error {
			if k != n || iv.Ops[0].OK != 1 || iv.Warmup != (k < 3) || !iv.End.Equal(time.Unix(int64(k+1), 0)) {
				t.Errorf("interval %d: %+v", k, iv)
			}
			n++
			return nil
		})
		if err != nil || n != 100 || rd.IntervalCount() != 100 {
			t.Fatalf("%d intervals of %d: %v", n, rd.IntervalCount(), err)
		}
	}
	if err := ivs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rd.EachInterval(func(int, *report.IntervalDoc) error { return nil }); err == nil {
		t.Error("a closed spool still reads")
	}
	if _, err := report.NewIntervals(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "set TMPDIR to a writable directory") {
		t.Errorf("a spool in a missing directory: %v", err)
	}
}
