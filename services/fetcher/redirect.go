package fetcher

// Redirects: a 3xx is not followed; its target, resolved against the
// request URL and held to the URL length limit, goes on the page.

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/trawlerhq/trawler/pkg/urlx"
)

// ErrRedirectTooLong is matched (errors.Is) by the Err of a 3xx whose
// target is longer than HTTPOptions.MaxURLLength: not followed, an error of
// the page.
var ErrRedirectTooLong = errors.New("redirect over the URL length limit")

// redirectTarget returns a 3xx response's Location resolved against the
// request URL, or "" when there is none or it does not parse.
func redirectTarget(resp *http.Response) string {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return ""
	}
	loc, err := resp.Location()
	if err != nil {
		return ""
	}
	return loc.String()
}

// redirect sets out.Location to a 3xx response's target, or says why the
// target is over the URL length limit (as sent, before it is parsed, or
// once resolved against the request URL).
func (c *HTTPClient) redirect(resp *http.Response, out *Response) error {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil
	}
	limit := c.opts.MaxURLLength
	if limit <= 0 {
		limit = urlx.MaxLength
	}
	if n := len(resp.Header.Get("Location")); n > limit {
		return fmt.Errorf("%w: Location of %d bytes, over the %d-byte URL limit", ErrRedirectTooLong, n, limit)
	}
	target := redirectTarget(resp)
	if len(target) > limit {
		return fmt.Errorf("%w: target of %d bytes, over the %d-byte URL limit", ErrRedirectTooLong, len(target), limit)
	}
	out.Location = target
	return nil
}
