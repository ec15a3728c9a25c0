package report

import "github.com/txload/txload/printable"

// quoteText quotes, in place, the text of d that a report prints on one
// line of its own making (printable.OneLine: escape codes, tab and newline
// written as escapes) and its violations (printable.Block: their later
// lines indented): a document is what its run said, or what an editor
// made of it, and a newline in its server's version printed a "check: ok"
// of its own at the start of a line (a retry of the eighth retest).
func quoteText(d *Document) {
	d.Workload, d.InterruptedBy = printable.OneLine(d.Workload), printable.OneLine(d.InterruptedBy)
	// The version (merge's warning of documents from different versions
	// printed it raw: retest 10), the command, the configuration and the
	// server's settings (the HTML page's subtitle and tables).
	d.Version, d.Command, d.RunID = printable.OneLine(d.Version), printable.OneLine(d.Command), printable.OneLine(d.RunID)
	for i, v := range d.MergedFrom {
		d.MergedFrom[i] = printable.OneLine(v)
	}
	for i, v := range d.MergedRunIDs {
		d.MergedRunIDs[i] = printable.OneLine(v)
	}
	d.Server = quoteAny(d.Server)
	if d.Config != nil {
		d.Config = quoteAny(d.Config).(map[string]any)
	}
	for i := range d.Runs {
		r := &d.Runs[i]
		labels := make(map[string]string, len(r.Labels))
		for k, v := range r.Labels {
			labels[printable.OneLine(k)] = printable.OneLine(v)
		}
		if r.Labels != nil {
			r.Labels = labels
		}
		r.InterruptedBy, r.RunFailed = printable.OneLine(r.InterruptedBy), printable.OneLine(r.RunFailed)
		for j, n := range r.Notes {
			r.Notes[j] = printable.OneLine(n)
		}
		if c := r.Check; c != nil {
			c.Error = printable.OneLine(c.Error)
			for j := range c.Lines {
				c.Lines[j].Label, c.Lines[j].Value = printable.OneLine(c.Lines[j].Label), printable.OneLine(c.Lines[j].Value)
			}
			for j, v := range c.Violations {
				c.Violations[j] = printable.Block(v)
			}
		}
	}
	for i := range d.Tables {
		t := &d.Tables[i]
		t.Title, t.Failed = printable.OneLine(t.Title), printable.OneLine(t.Failed)
		for j, l := range t.Lines {
			t.Lines[j] = printable.OneLine(l)
		}
		for _, row := range t.Rows {
			for j, c := range row {
				row[j] = printable.OneLine(c)
			}
		}
	}
}

// quoteAny is v, a value decoded from JSON, with each string in it (map
// keys included) quoted to one line.
func quoteAny(v any) any {
	switch v := v.(type) {
	case string:
		return printable.OneLine(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[printable.OneLine(k)] = quoteAny(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = quoteAny(e)
		}
		return v
	}
	return v
}
