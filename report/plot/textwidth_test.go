package plot

import "testing"

// TextWidth is at least the width a browser gives the text (chromium's
// getComputedTextLength, DejaVu Sans, measured on Debian) and never less
// than the PNG's bitmap font, 7 px a character; for ordinary labels at
// most half as much again as the wider of the two.
func TestTextWidth(t *testing.T) {
	tests := []struct {
		text     string
		size     float64
		browser  float64 // px
		ordinary bool
	}{
		{"fault", 10, 22.7, true},
		{"promotion requested", 10, 105.1, true},
		{"new primary", 10, 63.0, true},
		{"first commit", 10, 60.5, true},
		{"standby held", 10, 65.0, true},
		{"max 4900/s", 10, 59.0, true},
		{"SLO p99<=500ms", 10, 92.5, true},
		{"MAX 60/S", 10, 48.0, true},
		{"WWWWWWWWWW", 10, 98.9, true},
		{"mmmmmmmmmm", 10, 97.4, true},
		{"iiiiiiiiii", 10, 27.8, false},
		{"promotion requested", 13, 136.6, true},
		{"WWWWWWWWWW", 13, 128.5, true},
		{"SLO p99<=500ms", 13, 120.2, true},
	}
	for _, tt := range tests {
		w := TextWidth(tt.text, tt.size)
		png := float64(charWidth * len([]rune(tt.text)))
		if w < tt.browser || tt.ordinary && w > 1.5*max(tt.browser, png) {
			t.Errorf("TextWidth(%q, %g) = %.1f, the browser's %.1f", tt.text, tt.size, w, tt.browser)
		}
		if w < png {
			t.Errorf("TextWidth(%q, %g) = %.1f, narrower than the PNG's font", tt.text, tt.size, w)
		}
	}
	if w := TextWidth("", 10); w != 0 {
		t.Errorf("TextWidth of nothing = %g", w)
	}
	if a, b := TextWidth("µs", 10), TextWidth("us", 10); a != b {
		t.Errorf("µ counts as %g px, u as %g: characters, not bytes", a-b+TextWidth("u", 10), TextWidth("u", 10))
	}
}
