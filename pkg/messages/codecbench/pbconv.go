package codecbench

import (
	"time"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/messages/codecbench/pb"
	"google.golang.org/protobuf/proto"
)

// The protobuf codec as the services would use it: from the messages types
// to generated structs and back, the conversions counted, since every call
// site holds messages types.

func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func tm(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func toLinks(ls []messages.Link) []*pb.Link {
	out := make([]*pb.Link, len(ls))
	for i, l := range ls {
		out[i] = &pb.Link{Url: l.URL, Depth: int64(l.Depth), Hops: int64(l.Hops), Score: l.Score}
	}
	return out
}

func fromLinks(ls []*pb.Link) []messages.Link {
	if ls == nil {
		return nil
	}
	out := make([]messages.Link, len(ls))
	for i, l := range ls {
		out[i] = messages.Link{URL: l.Url, Depth: int(l.Depth), Hops: int(l.Hops), Score: l.Score}
	}
	return out
}

// PBMarshal encodes one of the messages types as protobuf.
func PBMarshal(v any) ([]byte, error) {
	var m proto.Message
	switch v := v.(type) {
	case *messages.FetchTask:
		m = &pb.FetchTask{V: int32(v.V), Id: v.ID, Partition: int64(v.Partition), Host: v.Host, Url: v.URL,
			Depth: int64(v.Depth), Hops: int64(v.Hops), Score: v.Score, Attempt: int64(v.Attempt),
			IssuedAt: ns(v.IssuedAt), Deadline: ns(v.Deadline), NotBefore: ns(v.NotBefore)}
	case *messages.Page:
		m = &pb.Page{V: int32(v.V), TaskId: v.TaskID, Url: v.URL, Host: v.Host, Partition: int64(v.Partition),
			Depth: int64(v.Depth), Hops: int64(v.Hops), Status: int64(v.Status), ContentType: v.ContentType,
			Headers: v.Headers, Location: v.Location, Error: v.Error, FetchedAt: ns(v.FetchedAt),
			DurationNs: int64(v.Duration), Ip: v.IP, BodySize: int64(v.BodySize), Truncated: v.Truncated,
			ErrorKind: v.ErrorKind, Skipped: v.Skipped, Encoding: v.Encoding}
	case *messages.FetchDone:
		m = &pb.FetchDone{V: int32(v.V), TaskId: v.TaskID, Partition: int64(v.Partition), Host: v.Host, Url: v.URL,
			Status: int64(v.Status), Error: v.Error, DurationNs: int64(v.Duration), Ip: v.IP,
			FinishedAt: ns(v.FinishedAt), Expired: v.Expired, Retry: v.Retry, RetryAfterNs: int64(v.RetryAfter),
			Disallowed: v.Disallowed, CrawlDelayNs: int64(v.CrawlDelay)}
	case *messages.Discovered:
		m = &pb.Discovered{V: int32(v.V), Partition: int64(v.Partition), Via: v.Via, Source: v.Source, Links: toLinks(v.Links)}
	case *messages.NewURLs:
		m = &pb.NewURLs{V: int32(v.V), Partition: int64(v.Partition), Links: toLinks(v.Links)}
	case *messages.Parsed:
		m = &pb.Parsed{V: int32(v.V), TaskId: v.TaskID, Url: v.URL, Status: int64(v.Status), ContentType: v.ContentType,
			Depth: int64(v.Depth), FetchedAt: ns(v.FetchedAt), Error: v.Error, Title: v.Title, Outlinks: v.Outlinks,
			Queued: int64(v.Queued), Text: v.Text, Headings: v.Headings, Lang: v.Lang, Charset: v.Charset,
			Canonical: v.Canonical, Noindex: v.NoIndex, Nofollow: v.NoFollow, Relevance: v.Relevance,
			Relevant: v.Relevant, Truncated: v.Truncated}
	}
	return proto.Marshal(m)
}

// PBUnmarshal decodes protobuf into one of the messages types.
func PBUnmarshal(data []byte, v any) error {
	switch v := v.(type) {
	case *messages.FetchTask:
		var m pb.FetchTask
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.FetchTask{V: int(m.V), ID: m.Id, Partition: int(m.Partition), Host: m.Host, URL: m.Url,
			Depth: int(m.Depth), Hops: int(m.Hops), Score: m.Score, Attempt: int(m.Attempt),
			IssuedAt: tm(m.IssuedAt), Deadline: tm(m.Deadline), NotBefore: tm(m.NotBefore)}
	case *messages.Page:
		var m pb.Page
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.Page{V: int(m.V), TaskID: m.TaskId, URL: m.Url, Host: m.Host, Partition: int(m.Partition),
			Depth: int(m.Depth), Hops: int(m.Hops), Status: int(m.Status), ContentType: m.ContentType,
			Headers: m.Headers, Location: m.Location, Error: m.Error, FetchedAt: tm(m.FetchedAt),
			Duration: time.Duration(m.DurationNs), IP: m.Ip, BodySize: int(m.BodySize), Truncated: m.Truncated,
			ErrorKind: m.ErrorKind, Skipped: m.Skipped, Encoding: m.Encoding}
	case *messages.FetchDone:
		var m pb.FetchDone
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.FetchDone{V: int(m.V), TaskID: m.TaskId, Partition: int(m.Partition), Host: m.Host, URL: m.Url,
			Status: int(m.Status), Error: m.Error, Duration: time.Duration(m.DurationNs), IP: m.Ip,
			FinishedAt: tm(m.FinishedAt), Expired: m.Expired, Retry: m.Retry, RetryAfter: time.Duration(m.RetryAfterNs),
			Disallowed: m.Disallowed, CrawlDelay: time.Duration(m.CrawlDelayNs)}
	case *messages.Discovered:
		var m pb.Discovered
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.Discovered{V: int(m.V), Partition: int(m.Partition), Via: m.Via, Source: m.Source, Links: fromLinks(m.Links)}
	case *messages.NewURLs:
		var m pb.NewURLs
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.NewURLs{V: int(m.V), Partition: int(m.Partition), Links: fromLinks(m.Links)}
	case *messages.Parsed:
		var m pb.Parsed
		if err := proto.Unmarshal(data, &m); err != nil {
			return err
		}
		*v = messages.Parsed{V: int(m.V), TaskID: m.TaskId, URL: m.Url, Status: int(m.Status), ContentType: m.ContentType,
			Depth: int(m.Depth), FetchedAt: tm(m.FetchedAt), Error: m.Error, Title: m.Title, Outlinks: m.Outlinks,
			Queued: int(m.Queued), Text: m.Text, Headings: m.Headings, Lang: m.Lang, Charset: m.Charset,
			Canonical: m.Canonical, NoIndex: m.Noindex, NoFollow: m.Nofollow, Relevance: m.Relevance,
			Relevant: m.Relevant, Truncated: m.Truncated}
	}
	return nil
}
