package store

// The revisit schedule in the embedded store: sched (8-byte unix ns due,
// then the URL -> the entry's value), ordered by due time so the entries due are
// a cursor's prefix; the value is schedule.go's), and schedURL (URL -> the 8-byte due of its entry), so
// that a URL is scheduled once and its entry found to replace or remove.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketSched    = []byte("sched")
	bucketSchedURL = []byte("sched-url")
)

const metaScheduled = "scheduled"

func schedKey(due time.Time, url string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(url)), uint64(max(due.UnixNano(), 0)))
	return append(k, url...)
}

// scheduleTx puts s in the schedule, replacing the URL's earlier entry.
func scheduleTx(part *bolt.Bucket, s Scheduled) (added bool, err error) {
	url, data, err := encodeSched(s)
	if err != nil {
		return false, err
	}
	sched, byURL := part.Bucket(bucketSched), part.Bucket(bucketSchedURL)
	if old := byURL.Get([]byte(url)); len(old) == 8 {
		if err := sched.Delete(append(bytes.Clone(old), url...)); err != nil {
			return false, err
		}
	} else {
		added = true
	}
	key := schedKey(s.Due, url)
	if err := sched.Put(key, data); err != nil {
		return false, err
	}
	return added, byURL.Put([]byte(url), key[:8])
}

// unscheduleTx removes url's entry; ok is false when it has none.
func unscheduleTx(part *bolt.Bucket, url string) (ok bool, err error) {
	byURL := part.Bucket(bucketSchedURL)
	old := byURL.Get([]byte(url))
	if len(old) != 8 {
		return false, nil
	}
	if err := part.Bucket(bucketSched).Delete(append(bytes.Clone(old), url...)); err != nil {
		return false, err
	}
	return true, byURL.Delete([]byte(url))
}

// Due returns the revisits due at or before now; see Frontier.Due.
func (b *Bolt) Due(ctx context.Context, p int, now time.Time, limit int) ([]Scheduled, error) {
	if err := checkArgs(ctx, p); err != nil {
		return nil, err
	}
	var out []Scheduled
	err := b.view(func(tx *bolt.Tx) error {
		part := readPart(tx, p)
		if part == nil || part.Bucket(bucketSched) == nil {
			return nil
		}
		upTo := uint64(max(now.UnixNano(), 0))
		c := part.Bucket(bucketSched).Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > upTo {
				break
			}
			e, err := decodeSched(string(k[8:]), v, time.Unix(0, int64(binary.BigEndian.Uint64(k))))
			if err != nil {
				return fmt.Errorf("%w (partition %d)", err, p)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// schedCounts counts part's entries due by now and within the hour after.
func schedCounts(part *bolt.Bucket, now time.Time) (dueNow, dueHour int64) {
	sched := part.Bucket(bucketSched)
	if sched == nil {
		return 0, 0
	}
	nowKey, hourKey := uint64(max(now.UnixNano(), 0)), uint64(max(now.Add(time.Hour).UnixNano(), 0))
	c := sched.Cursor()
	for k, _ := c.First(); k != nil && len(k) >= 8; k, _ = c.Next() {
		due := binary.BigEndian.Uint64(k)
		if due > hourKey {
			break
		}
		if due <= nowKey {
			dueNow++
		}
		dueHour++
	}
	return dueNow, dueHour
}
