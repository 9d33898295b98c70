// Package redact hides the credentials of connection URLs and addresses
// (NATS server lists, Redis addresses) before they reach a log line, an
// error or a status display.
//
// It works on the text, not through net/url, so that a URL net/url cannot
// parse (a password with an unescaped "@" or "/", a typo) is hidden all the
// same; for the URLs it can parse the result is url.URL.Redacted's, except
// that a user name alone (a NATS token) is hidden too.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces every password and token.
const Mask = "xxxxx"

// URLs returns list, one URL or address or several separated by commas,
// with every password and token replaced by Mask. A user name followed by a
// password is kept ("nats://user:xxxxx@host:4222"); a user name alone is a
// token in NATS URLs and is hidden ("nats://xxxxx@host:4222").
func URLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		prefix, info, rest, ok := split(p)
		if !ok {
			continue
		}
		parts[i] = prefix + mask(info) + "@" + rest
	}
	return strings.Join(parts, ",")
}

// In returns msg with the secrets of the URLs in list replaced by Mask: a
// library's error may quote the URL (or part of it) it was given.
func In(msg, list string) string {
	for _, p := range strings.Split(list, ",") {
		_, info, _, ok := split(p)
		if !ok {
			continue
		}
		msg = strings.ReplaceAll(msg, info, mask(info))
		secret := info
		if _, pw, hasPassword := strings.Cut(info, ":"); hasPassword {
			secret = pw
		}
		if secret == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, secret, Mask)
		if plain, err := url.PathUnescape(secret); err == nil && plain != "" && plain != secret {
			msg = strings.ReplaceAll(msg, plain, Mask)
		}
	}
	return msg
}

// split cuts p into the part before its userinfo (scheme and "://"), the
// userinfo and the part after the "@". The last "@" ends the userinfo, as
// passwords are more likely to hold an "@" than host names or paths are.
func split(p string) (prefix, info, rest string, ok bool) {
	start := 0
	if i := strings.Index(p, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(p[start:], "@")
	if at < 0 {
		return "", "", "", false
	}
	return p[:start], p[start : start+at], p[start+at+1:], true
}

// mask hides the password of a userinfo, or the whole of it when it is a
// user name (a token) alone.
func mask(info string) string {
	if user, _, hasPassword := strings.Cut(info, ":"); hasPassword {
		return user + ":" + Mask
	}
	return Mask
}
