package htmlreport

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/txload/txload/report"
)

// A document records every flag of its command. The configuration table
// shows those that shaped the run, in groups: what was run and how hard,
// the search or the replication measured, the workload's own settings, the
// target; then the server. Left out: the outputs and diagnostics (they
// change what is written, not what is measured), and switches left off or
// at zero (a latency limit of 0s, no warm-up, no partitions).

// group is a part of the configuration table.
type group struct {
	title string
	keys  []string // in this order; nil: every key no other group takes
	// command, when set, is the command whose documents the group is
	// for: its keys are filed there only when the page has one.
	command string
}

// groups are the table's groups, in order.
var groups = [...]group{
	{"load", append([]string{"mode", report.KeyConcurrency, report.KeyThreads, "jobs", report.KeyRate, report.KeyArrival,
		report.KeyDuration, report.KeyTransactions, report.KeyWarmup, "ramp", report.KeyMaxTries, report.KeyLatencyLimit, "max-lag",
		"drain-timeout", "continue-on-error", report.KeyConnect, report.KeyProtocol, report.KeySeed, report.KeyInstance,
		report.KeyInstances, "init"}, report.OlderKeys()...), ""},
	{"sweep", []string{"slo", "start", "factor", "step-duration", "step-warmup", "max-error-rate", "max-steps", "precision"}, ""},
	{"failover", []string{"replication", "fault", "at", "promote-after", "hold-standby", "failover-command", "failover-timeout", "probe-interval"}, "failover"},
	{"replication lag", []string{"replication", "mark-interval", "poll-interval", "mark-transactions", "map", "tables"}, ""},
	{"workload", nil, ""},
	{"target", []string{report.KeyURLs, "source", "dest", "pooler", "embedded-version"}, ""},
}

// outputs are flags that do not shape a run: what it writes, and how much
// it says while it runs.
var outputs = map[string]bool{
	"help": true, "json": true, "html": true, "csv": true, "chart": true, "histogram": true, "cpuprofile": true, "metrics-addr": true, "live": true,
	"output": true, report.KeyProgress: true, "verbose-errors": true, "quiet": true, "report-per-statement": true, report.KeyFailuresDetailed: true,
	"log": true, "log-prefix": true, "aggregate-interval": true, "sampling-rate": true,
}

// serverSettings are the server settings shown, by their names in the
// document, with the label the table gives them.
var serverSettings = [...][2]string{
	{"default_transaction_isolation", "default isolation"},
	{"synchronous_commit", "synchronous_commit"},
	{"fsync", "fsync"},
	{"full_page_writes", "full_page_writes"},
	{"max_connections", "max_connections"},
	{"shared_buffers", "shared_buffers"},
}

// off says a value is a switch left off or a zero.
func off(v string) bool {
	switch v {
	case "", "[]", "false", "0", "0s":
		return true
	}
	return false
}

// settingsOf is a document's shaping settings as text, derived ones
// included ("mode").
func settingsOf(d *report.Document) map[string]string {
	out := map[string]string{}
	for k, v := range d.Config {
		if outputs[k] {
			continue
		}
		if s, ok := v.([]string); ok { // a document written by the run that draws it
			v = toAny(s)
		}
		text := valueText(Redact(v))
		if strings.Contains(strings.ToLower(k), "password") {
			text = "xxxxx"
		}
		if off(text) {
			continue
		}
		out[k] = text
	}
	switch d.Command {
	case "sweep": // the rate is each step's
		out["mode"] = fmt.Sprintf("open loop at each step's rate (%s), %s workers", orDefault(d.ConfigString(report.KeyArrival), "poisson"), d.ConfigString(report.KeyConcurrency))
	default:
		out["mode"] = d.Mode()
	}
	if server, ok := serverMap(d.Server); !ok || server["embedded"] != true {
		delete(out, "embedded-version") // it applies only to the embedded server
	} else {
		delete(out, report.KeyURLs) // the throwaway server's port
	}
	return out
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// serverMap is the document's server as its JSON has it: a document
// written by the run that draws it holds the server's Go value.
func serverMap(server any) (map[string]any, bool) {
	if m, ok := server.(map[string]any); ok || server == nil {
		return m, ok
	}
	b, err := json.Marshal(server)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil
}

// serverOf is what a document says of its server: identity, then
// settings.
func serverOf(d *report.Document) (rows [][2]string, recorded bool) {
	m, ok := serverMap(d.Server)
	if !ok {
		return [][2]string{{"server", d.ServerString()}}, false
	}
	id := d.ServerString()
	if m["embedded"] == true {
		id += " (embedded, started by txload)"
	}
	rows = append(rows, [2]string{"server", id})
	if b, ok := m["banner"].(string); ok && b != "" {
		rows = append(rows, [2]string{"version()", b})
	}
	settings, _ := m["settings"].(map[string]any)
	for _, s := range serverSettings {
		if v, ok := settings[s[0]]; ok {
			rows = append(rows, [2]string{s[1], fmt.Sprint(v)})
		}
	}
	return rows, len(settings) > 0
}

func configSection(p *page, docs []*report.Document, names []string) {
	p.printf("<h2>Configuration and server</h2>")
	p.printf(`<p class="note">The settings that shaped each run, given or derived; outputs, and switches left off or at zero, are left out.%s</p>`,
		map[bool]string{true: " Rows whose values differ are highlighted.", false: ""}[len(docs) > 1])
	settings := make([]map[string]string, len(docs))
	for i, d := range docs {
		settings[i] = settingsOf(d)
	}
	p.printf(`<table class="config"><tr><th>setting</th>`)
	for i, d := range docs {
		p.printf(`<th class="l">%s<br><span class="note">txload %s %s (txload %s)</span></th>`, esc(names[i]), esc(d.Command), esc(d.Workload), esc(d.Version))
	}
	p.printf("</tr>")
	commands := map[string]bool{}
	for _, d := range docs {
		commands[d.Command] = true
	}
	taken := map[string]bool{}
	for _, g := range groups {
		taken = mapsAdd(taken, g.keys)
	}
	filed := map[string]bool{} // a key is filed in the first group that applies
	row := func(key string, values []string) {
		cls := ""
		if len(values) > 1 && slices.ContainsFunc(values, func(v string) bool { return v != values[0] }) {
			cls = ` class="differs"`
		}
		p.printf(`<tr%s><td>%s</td>`, cls, esc(key))
		for _, v := range values {
			p.printf(`<td class="l">%s</td>`, esc(v))
		}
		p.printf("</tr>")
	}
	header := func(title string) {
		p.printf(`<tr class="group"><th colspan="%d">%s</th></tr>`, len(docs)+1, esc(title))
	}
	for _, g := range groups {
		if g.command != "" && !commands[g.command] {
			continue
		}
		keys := g.keys
		if keys == nil {
			all := map[string]bool{}
			for _, s := range settings {
				for k := range s {
					if !taken[k] {
						all[k] = true
					}
				}
			}
			keys = slices.Sorted(maps.Keys(all))
		}
		first := true
		for _, k := range keys {
			if filed[k] {
				continue
			}
			filed[k] = true
			values := make([]string, len(docs))
			any := false
			for i, s := range settings {
				values[i] = s[k]
				any = any || s[k] != ""
			}
			if !any {
				continue
			}
			if first {
				header(g.title)
				first = false
			}
			row(k, values)
		}
	}
	header("server")
	servers := make([][][2]string, len(docs))
	var labels []string
	var missing []string
	for i, d := range docs {
		rows, recorded := serverOf(d)
		servers[i] = rows
		for _, r := range rows {
			if !slices.Contains(labels, r[0]) {
				labels = append(labels, r[0])
			}
		}
		if !recorded && d.Server != nil {
			missing = append(missing, names[i])
		}
	}
	for _, l := range labels {
		values := make([]string, len(docs))
		for i, rows := range servers {
			for _, r := range rows {
				if r[0] == l {
					values[i] = r[1]
				}
			}
		}
		row(l, values)
	}
	p.printf("</table>")
	if len(missing) > 0 {
		p.printf(`<p class="note">%s: the document records no server settings (it was written by a txload that did not read them).</p>`, esc(strings.Join(missing, ", ")))
	}
	for i, d := range docs {
		if len(d.MergedFrom) > 0 {
			p.printf(`<p class="note">%s: merged from %s</p>`, esc(names[i]), esc(strings.Join(d.MergedFrom, ", ")))
		}
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

func mapsAdd(m map[string]bool, keys []string) map[string]bool {
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func valueText(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e)
		}
		return strings.Join(parts, ", ")
	case []string:
		return strings.Join(x, ", ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact hides passwords in a configuration value: in URLs
// (postgres://user:secret@host) and in key=value connection strings. The
// runs write their configuration redacted already; this is for documents
// edited or written by others.
func Redact(v any) any {
	switch x := v.(type) {
	case string:
		if u, err := url.Parse(x); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
				x = u.String()
			}
		}
		if q, err := url.Parse(x); err == nil && q.RawQuery != "" {
			vals := q.Query()
			changed := false
			for k := range vals {
				if strings.Contains(strings.ToLower(k), "password") {
					vals.Set(k, "xxxxx")
					changed = true
				}
			}
			if changed {
				q.RawQuery = vals.Encode()
				x = q.String()
			}
		}
		if strings.Contains(x, "://") {
			return x
		}
		return dsnPassword.ReplaceAllString(x, "${1}xxxxx")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Redact(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.Contains(strings.ToLower(k), "password") {
				out[k] = "xxxxx"
				continue
			}
			out[k] = Redact(e)
		}
		return out
	}
	return v
}
