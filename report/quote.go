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
	if s, ok := d.Server.(map[string]any); ok {
		for k, v := range s {
			if t, ok := v.(string); ok {
				s[k] = printable.OneLine(t)
			}
		}
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
