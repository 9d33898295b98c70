package codecbench

import (
	"testing"

	"github.com/trawlerhq/trawler/pkg/messages"
	"github.com/trawlerhq/trawler/pkg/messages/codecbench/pb"
	"google.golang.org/protobuf/proto"
)

// BenchmarkProtobufOnly is protobuf's floor: the generated structs built
// once, marshalled and unmarshalled, no conversion from or to the messages
// types (which the services would need).
func BenchmarkProtobufOnly(b *testing.B) {
	m := NewMix()
	var msgs []proto.Message
	for _, v := range m.Values() {
		data, _ := PBMarshal(v)
		msgs = append(msgs, fresh(v))
		_ = proto.Unmarshal(data, msgs[len(msgs)-1])
	}
	loop(b, func() {
		for _, pm := range msgs {
			data, _ := proto.Marshal(pm)
			out := pm.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(data, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func fresh(v any) proto.Message {
	switch v.(type) {
	case *messages.FetchTask:
		return &pb.FetchTask{}
	case *messages.Page:
		return &pb.Page{}
	case *messages.FetchDone:
		return &pb.FetchDone{}
	case *messages.Discovered:
		return &pb.Discovered{}
	case *messages.NewURLs:
		return &pb.NewURLs{}
	default:
		return &pb.Parsed{}
	}
}
