//go:build tools

// Package deps pins modules that parallel work is about to import, so that
// go.mod does not change under several engineers at once. Remove an import
// once a real package uses it.
package deps

import (
	_ "github.com/andybalholm/brotli"
	_ "github.com/bits-and-blooms/bloom/v3"
	_ "github.com/miekg/dns"
)
