package ledger

import (
	"math"
	"strconv"
)

// RFC 8785 numbers: the ECMAScript serialization of the nearest double.

// number writes the number at c.pos as ECMAScript's Number.prototype.
// toString writes the nearest double.
func (c *canonicalizer) number() error {
	src := c.src
	start := c.pos
	i := start
	if src[i] == '-' {
		i++
	}
	// Integer part: "0" or a non-zero digit and more digits.
	intStart := i
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		i++
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	default:
		c.pos = i
		return c.errorf("invalid number")
	}
	digits := i - intStart
	fracStart := i // after the '.', if any
	if i < len(src) && src[i] == '.' {
		i++
		fracStart = i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		if i == fracStart {
			c.pos = i
			return c.errorf("invalid number: no digits after '.'")
		}
		digits += i - fracStart
	}
	hasExp := i < len(src) && (src[i] == 'e' || src[i] == 'E')
	if hasExp {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		if i == j {
			c.pos = i
			return c.errorf("invalid number: no digits in exponent")
		}
	}
	c.pos = i
	// Without exponent and with at most 15 digits, the number is the
	// shortest decimal of its nearest double (every decimal of up to 15
	// significant digits round-trips through a double), so its canonical
	// form is itself without trailing fraction zeros, unless it is zero or
	// below 1e-6 (which ECMAScript writes with an exponent).
	if !hasExp && digits <= 15 {
		end := i
		if fracStart < i { // has a fraction
			for src[end-1] == '0' {
				end--
			}
			if end == fracStart {
				end-- // drop the '.'
			}
		}
		if src[intStart] != '0' {
			c.dst = append(c.dst, src[start:end]...)
			return nil
		}
		if end == intStart+1 { // zero
			c.dst = append(c.dst, '0')
			return nil
		}
		if nz := fracStart; end-nz > 0 {
			for src[nz] == '0' {
				nz++
			}
			if nz-fracStart <= 5 { // at least 1e-6
				c.dst = append(c.dst, src[start:end]...)
				return nil
			}
		}
	}
	f, err := strconv.ParseFloat(string(src[start:i]), 64)
	if err != nil || math.IsInf(f, 0) {
		c.pos = start
		return c.errorf("number %s is out of the double range", src[start:i])
	}
	c.dst = appendES6Number(c.dst, f)
	return nil
}

// appendES6Number appends f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3); f is finite. This is encoding/json's float64 encoder
// with -0 written as 0.
func appendES6Number(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
