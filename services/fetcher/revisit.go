package fetcher

// Revisits of a continuous crawl: the task's record of the last visit
// becomes a conditional GET, and the response tells whether the page
// changed (a 304, or a body with the last visit's digest, is unchanged).

import (
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/warc"
)

// conditional is the task's validators as request options.
func conditional(task messages.FetchTask) FetchOptions {
	o := FetchOptions{Sitemap: task.Sitemap}
	if r := task.Revisit; r != nil {
		o.IfNoneMatch, o.IfModifiedSince = r.ETag, r.LastModified
	}
	return o
}

// revisited is the URL's record after a visit that got response r at
// fetched, and whether the page changed since the last visit (nil on a
// first visit, and when nothing came back to compare). The digest is the
// WARC payload digest of the body, so an unchanged page's revisit record
// can name the payload it repeats.
func revisited(last messages.Revisit, r Response, fetched time.Time) (messages.Revisit, *bool) {
	next := last
	next.Visits++
	next.ChangeFreq, next.Lastmod = "", time.Time{} // the sitemap's hints served the first interval
	if r.Err != nil || r.Status == 0 {
		return next, nil
	}
	if etag := r.Headers["ETag"]; etag != "" {
		next.ETag = etag
	}
	if lm := r.Headers["Last-Modified"]; lm != "" {
		next.LastModified = lm
	}
	if r.Status == 304 {
		if last.Visits == 0 {
			return next, nil // a 304 to a request without validators: nothing to compare
		}
		changed := false
		return next, &changed
	}
	next.Digest = warc.Digest(r.Body)
	if last.Visits == 0 || last.Digest == "" {
		next.Since = fetched
		return next, nil
	}
	changed := next.Digest != last.Digest
	if changed {
		next.Since = fetched
	}
	return next, &changed
}
