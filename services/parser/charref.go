package parser

// Character references: decoding them in attribute values by the HTML rules
// for attributes, and in text.

import (
	"bytes"
	"html"
	"strings"
)

// unescapeAttr decodes character references in an attribute value by the
// HTML rules for attributes: a named reference without its ';' is decoded
// only when it is a whole legacy name not followed by '=' ("&copy" is ©,
// but "?a=1&copy=2" and "&notify" stay as written, as they do in browsers).
func unescapeAttr(v []byte) []byte {
	if bytes.IndexByte(v, '\r') >= 0 { // newlines normalized, as the tokenizer does
		v = bytes.ReplaceAll(bytes.ReplaceAll(v, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	}
	if bytes.IndexByte(v, '&') < 0 {
		return v
	}
	var out []byte
	last := 0
	for i := 0; i < len(v); i++ {
		if v[i] != '&' {
			continue
		}
		ref, dec, ok := attrReference(v[i:])
		if !ok {
			continue
		}
		out = append(out, v[last:i]...)
		out = append(out, dec...)
		last = i + len(ref)
		i = last - 1
	}
	if out == nil {
		return v
	}
	return append(out, v[last:]...)
}

// attrReference reads the character reference at the start of v ("&..."),
// returning its text and what it stands for, if it is one that counts in
// an attribute value.
func attrReference(v []byte) (ref, dec string, ok bool) {
	j := 1
	if j < len(v) && v[j] == '#' { // numeric: decoded with or without ';'
		j++
		hex := j < len(v) && v[j]|0x20 == 'x'
		if hex {
			j++
		}
		start := j
		for j < len(v) && ('0' <= v[j] && v[j] <= '9' || hex && 'a' <= v[j]|0x20 && v[j]|0x20 <= 'f') {
			j++
		}
		if j == start {
			return "", "", false
		}
		if j < len(v) && v[j] == ';' {
			j++
		}
		ref = string(v[:j])
		return ref, html.UnescapeString(ref), true
	}
	for j < len(v) && (asciiLetter(v[j]) || '0' <= v[j] && v[j] <= '9') {
		j++
	}
	name := string(v[1:j])
	if name == "" {
		return "", "", false
	}
	if j < len(v) && v[j] == ';' {
		// Only the whole name counts: a prefix match ("&amp0;") would
		// leave the ';' undecoded, and in an attribute is not one.
		ref = "&" + name + ";"
		dec = html.UnescapeString(ref)
		return ref, dec, dec != ref && (dec == ";" || !strings.HasSuffix(dec, ";"))
	}
	// No ';': a legacy name, whole, and not followed by '='.
	ref = "&" + name
	dec = html.UnescapeString(ref)
	whole := dec != ref && !strings.HasSuffix(dec, name[len(name)-1:])
	return ref, dec, whole && !(j < len(v) && v[j] == '=')
}

// unescapeText decodes character references in text.
func unescapeText(b []byte) []byte {
	if bytes.IndexByte(b, '&') < 0 {
		return b
	}
	return []byte(html.UnescapeString(string(b)))
}
