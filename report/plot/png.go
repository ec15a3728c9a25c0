package plot

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// PNG writes the chart as a PNG image: the same layout as SVG, rasterised
// with anti-aliased lines and a bitmap font (7×13 px, ASCII and µ: other
// characters are spelt in ASCII or shown as '?').
func (c *Chart) PNG(w io.Writer) error {
	l := c.layout()
	rc := &rasterCanvas{img: image.NewRGBA(image.Rect(0, 0, l.width, l.total)), face: newFace()}
	rc.z = vector.NewRasterizer(l.width, l.total)
	rc.clipR = rc.img.Bounds()
	c.draw(rc)
	if err := png.Encode(w, rc.img); err != nil {
		return fmt.Errorf("encoding PNG: %w", err)
	}
	return nil
}

type rasterCanvas struct {
	img   *image.RGBA
	face  font.Face
	z     *vector.Rasterizer
	clipR image.Rectangle
}

// parseColor reads #rgb and #rrggbb; anything else is transparent.
func parseColor(s string) (color.RGBA, bool) {
	s = strings.TrimPrefix(s, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 {
		return color.RGBA{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return color.RGBA{}, false
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}, true
}

type pt struct{ x, y float64 }

// fill draws the polygons (each closed, wound counter-clockwise so that
// overlaps add up rather than cancel) in col.
func (r *rasterCanvas) fill(col string, polys ...[]pt) {
	c, ok := parseColor(col)
	if !ok || len(polys) == 0 {
		return
	}
	b := r.img.Bounds()
	r.z.Reset(b.Dx(), b.Dy())
	for _, p := range polys {
		if len(p) < 3 {
			continue
		}
		r.z.MoveTo(float32(p[0].x), float32(p[0].y))
		for _, q := range p[1:] {
			r.z.LineTo(float32(q.x), float32(q.y))
		}
		r.z.ClosePath()
	}
	r.z.Draw(r.img, b, image.NewUniform(c), image.Point{})
}

// ccw returns p wound one way: positive signed area.
func ccw(p []pt) []pt {
	a := 0.0
	for i := range p {
		j := (i + 1) % len(p)
		a += p[i].x*p[j].y - p[j].x*p[i].y
	}
	if a < 0 {
		for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
			p[i], p[j] = p[j], p[i]
		}
	}
	return p
}

func disc(cx, cy, r float64) []pt {
	const n = 20
	p := make([]pt, n)
	for i := range p {
		a := 2 * math.Pi * float64(i) / n
		p[i] = pt{cx + r*math.Cos(a), cy + r*math.Sin(a)}
	}
	return ccw(p)
}

func reversed(p []pt) []pt {
	q := make([]pt, len(p))
	for i := range p {
		q[i] = p[len(p)-1-i]
	}
	return q
}

// quad is segment a-b widened to w, with round ends.
func quad(a, b pt, w float64) [][]pt {
	dx, dy := b.x-a.x, b.y-a.y
	l := math.Hypot(dx, dy)
	if l == 0 {
		return [][]pt{disc(a.x, a.y, w/2)}
	}
	nx, ny := -dy/l*w/2, dx/l*w/2
	out := [][]pt{ccw([]pt{{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}})}
	if w >= 1.5 {
		out = append(out, disc(a.x, a.y, w/2), disc(b.x, b.y, w/2))
	}
	return out
}

// dashes cuts the path into its drawn pieces by the SVG dash array.
func dashes(path []pt, dash string) [][2]pt {
	var pattern []float64
	for _, f := range strings.Fields(dash) {
		if v, err := strconv.ParseFloat(f, 64); err == nil && v > 0 {
			pattern = append(pattern, v)
		}
	}
	if len(pattern)%2 == 1 { // as SVG does: an odd list is repeated
		pattern = append(pattern, pattern...)
	}
	var out [][2]pt
	if len(pattern) == 0 {
		for i := 1; i < len(path); i++ {
			out = append(out, [2]pt{path[i-1], path[i]})
		}
		return out
	}
	k, left, on := 0, pattern[0], true
	for i := 1; i < len(path); i++ {
		a, b := path[i-1], path[i]
		l := math.Hypot(b.x-a.x, b.y-a.y)
		pos := 0.0
		for pos < l {
			step := math.Min(left, l-pos)
			if on {
				t0, t1 := pos/l, (pos+step)/l
				out = append(out, [2]pt{{a.x + (b.x-a.x)*t0, a.y + (b.y-a.y)*t0}, {a.x + (b.x-a.x)*t1, a.y + (b.y-a.y)*t1}})
			}
			pos += step
			left -= step
			if left <= 1e-9 {
				k = (k + 1) % len(pattern)
				left, on = pattern[k], !on
			}
		}
	}
	return out
}

// clipSegment clips a-b to r (Liang-Barsky); ok is false when nothing is
// left.
func clipSegment(a, b pt, r image.Rectangle) (pt, pt, bool) {
	t0, t1, ok := clipT(a, b, float64(r.Min.X), float64(r.Min.Y), float64(r.Max.X), float64(r.Max.Y))
	if !ok {
		return a, b, false
	}
	dx, dy := b.x-a.x, b.y-a.y
	return pt{a.x + t0*dx, a.y + t0*dy}, pt{a.x + t1*dx, a.y + t1*dy}, true
}

func (r *rasterCanvas) stroke(path []pt, col string, width float64, dash string) {
	var polys [][]pt
	for _, s := range dashes(path, dash) {
		a, b, ok := clipSegment(s[0], s[1], r.clipR)
		if ok {
			polys = append(polys, quad(a, b, width)...)
		}
	}
	r.fill(col, polys...)
}

func (r *rasterCanvas) rect(x, y, w, h float64, fill, stroke string) {
	if c, ok := parseColor(fill); ok {
		draw.Draw(r.img, image.Rect(int(math.Round(x)), int(math.Round(y)), int(math.Round(x+w)), int(math.Round(y+h))), image.NewUniform(c), image.Point{}, draw.Over)
	}
	if stroke != "" {
		r.line(x, y, x+w, y, stroke, 1, "")
		r.line(x+w, y, x+w, y+h, stroke, 1, "")
		r.line(x+w, y+h, x, y+h, stroke, 1, "")
		r.line(x, y+h, x, y, stroke, 1, "")
	}
}

func (r *rasterCanvas) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	if dash == "" && width <= 1 && (x1 == x2 || y1 == y2) {
		// Axis-aligned hairlines on whole pixels: crisp.
		c, ok := parseColor(stroke)
		if !ok {
			return
		}
		rx1, ry1, rx2, ry2 := int(math.Round(min(x1, x2))), int(math.Round(min(y1, y2))), int(math.Round(max(x1, x2))), int(math.Round(max(y1, y2)))
		draw.Draw(r.img, image.Rect(rx1, ry1, rx2+1, ry2+1).Intersect(r.clipR), image.NewUniform(c), image.Point{}, draw.Over)
		return
	}
	r.stroke([]pt{{x1, y1}, {x2, y2}}, stroke, width, dash)
}

func (r *rasterCanvas) polyline(xs, ys []float64, stroke string, width float64, dash string) {
	path := make([]pt, len(xs))
	for i := range xs {
		path[i] = pt{xs[i], ys[i]}
	}
	r.stroke(path, stroke, width, dash)
}

func (r *rasterCanvas) circle(cx, cy, rad float64, fill, stroke string) {
	if !(image.Point{X: int(cx), Y: int(cy)}).In(r.clipR) {
		return
	}
	r.fill(fill, disc(cx, cy, rad))
	if stroke != "" && stroke != fill {
		r.fill(stroke, disc(cx, cy, rad+0.75), reversed(disc(cx, cy, rad-0.75)))
	}
}

func (r *rasterCanvas) square(cx, cy, rad float64, fill, stroke string) {
	if !(image.Point{X: int(cx), Y: int(cy)}).In(r.clipR) {
		return
	}
	box := func(d float64) []pt {
		return ccw([]pt{{cx - d, cy - d}, {cx + d, cy - d}, {cx + d, cy + d}, {cx - d, cy + d}})
	}
	r.fill(fill, box(rad))
	if stroke != "" && stroke != fill {
		r.fill(stroke, box(rad+0.75), reversed(box(rad-0.75)))
	}
}

// band fills the area between lo and hi with fill mixed into white, as
// the SVG's fill-opacity shows it over the white plot.
func (r *rasterCanvas) band(xs, lo, hi []float64, fill string) {
	if len(xs) < 2 {
		return
	}
	pale := Tint(fill, 1-bandOpacity)
	poly := make([]pt, 0, 2*len(xs))
	for i := range xs {
		poly = append(poly, pt{xs[i], hi[i]})
	}
	for i := len(xs) - 1; i >= 0; i-- {
		poly = append(poly, pt{xs[i], lo[i]})
	}
	r.fill(pale, ccw(poly))
}

// newFace is the bitmap font: basicfont's 7×13 (ASCII) with a µ added,
// a u whose left stem goes down below the baseline, so that the unit of a
// tick (100µs) reads as in the SVG.
func newFace() *basicfont.Face {
	base := basicfont.Face7x13
	src := base.Mask.(*image.Alpha)
	glyphs := src.Rect.Dy() / base.Height
	mask := image.NewAlpha(image.Rect(0, 0, src.Rect.Dx(), (glyphs+1)*base.Height))
	copy(mask.Pix, src.Pix)
	u := int('u'-0x20) * base.Height // the rows of u's glyph
	mu := glyphs * base.Height
	for y := range base.Height {
		for x := range src.Rect.Dx() {
			mask.SetAlpha(x, mu+y, src.AlphaAt(x, u+y))
		}
	}
	for y := base.Ascent - 1; y < base.Height; y++ { // the stem, to the bottom of the descent
		mask.SetAlpha(0, mu+y, color.Alpha{A: 0xff})
	}
	f := *base
	f.Mask = mask
	f.Ranges = append(slices.Clone(base.Ranges), basicfont.Range{Low: 'µ', High: 'µ' + 1, Offset: glyphs})
	slices.SortFunc(f.Ranges, func(a, b basicfont.Range) int { return cmp.Compare(a.Low, b.Low) }) // as Face wants them
	return &f
}

// ascii spells text in the bitmap font's characters (ASCII and µ).
func ascii(s string) string {
	s = strings.NewReplacer("≥", ">=", "≤", "<=", "…", "...").Replace(s)
	return strings.Map(func(c rune) rune {
		switch c {
		case 'µ':
			return c
		case '—', '–', '−':
			return '-'
		case '×':
			return 'x'
		}
		if c < 0x20 || c > 0x7e {
			return '?'
		}
		return c
	}, s)
}

func (r *rasterCanvas) text(x, y float64, s string, st textStyle) {
	anchor, bold, vertical := st.anchor, st.bold, st.vertical
	c, ok := parseColor(st.color)
	if !ok || s == "" {
		return
	}
	s = ascii(s)
	face := r.face
	width := font.MeasureString(face, s).Ceil()
	shift := 0
	switch anchor {
	case "middle":
		shift = width / 2
	case "end":
		shift = width
	}
	if !vertical {
		d := &font.Drawer{Dst: r.img, Src: image.NewUniform(c), Face: face, Dot: fixed.P(int(math.Round(x))-shift, int(math.Round(y)))}
		d.DrawString(s)
		if bold {
			d.Dot = fixed.P(int(math.Round(x))-shift+1, int(math.Round(y)))
			d.DrawString(s)
		}
		return
	}
	// Draw horizontally, then turn 90° counter-clockwise about (x, y).
	tmp := image.NewRGBA(image.Rect(0, 0, width, 16))
	d := &font.Drawer{Dst: tmp, Src: image.NewUniform(c), Face: face, Dot: fixed.P(0, 11)}
	d.DrawString(s)
	rot := image.NewRGBA(image.Rect(0, 0, 16, width))
	for ty := 0; ty < 16; ty++ {
		for tx := 0; tx < width; tx++ {
			rot.Set(ty, width-1-tx, tmp.At(tx, ty))
		}
	}
	ox, oy := int(math.Round(x))-11, int(math.Round(y))-width+shift
	draw.Draw(r.img, rot.Bounds().Add(image.Pt(ox, oy)), rot, image.Point{}, draw.Over)
}

func (r *rasterCanvas) clip(x, y, w, h float64) {
	r.clipR = image.Rect(int(math.Floor(x)), int(math.Floor(y)), int(math.Ceil(x+w)), int(math.Ceil(y+h))).Intersect(r.img.Bounds())
}

func (r *rasterCanvas) unclip() { r.clipR = r.img.Bounds() }

func (r *rasterCanvas) series(Series, int) {}

func (r *rasterCanvas) endSeries() {}
