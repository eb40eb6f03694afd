package store

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCodecString(t *testing.T) {
	want := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	for i, c := range allCodecs {
		if c.String() != want[i] {
			t.Errorf("Codec(%d).String() = %q, want %q", i, c.String(), want[i])
		}
	}
	if s := Codec(6).String(); s != "Codec(6)" {
		t.Errorf("Codec(6).String() = %q", s)
	}
}

func TestCompressRoundTrip(t *testing.T) {
	inputs := map[string][]byte{
		"empty":      {},
		"one byte":   {42},
		"small":      pattern(1, 1000),
		"multiblock": pattern(2, 300_000), // several xerial and LZ4 blocks
		"random":     randomBytes(70_000),
	}
	dec := NewDecompressor()
	for _, codec := range allCodecs {
		for name, src := range inputs {
			t.Run(codec.String()+"/"+name, func(t *testing.T) {
				out, err := Compress(codec, []byte("dst"), src)
				if err != nil {
					t.Fatal(err)
				}
				if string(out[:3]) != "dst" {
					t.Fatal("Compress did not append")
				}
				got, err := dec.Decompress(codec, out[3:])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("round trip of %d bytes gave %d bytes back", len(src), len(got))
				}
			})
		}
	}
	if _, err := Compress(Codec(5), nil, []byte("x")); err == nil {
		t.Fatal("Compress with an unknown codec succeeded")
	}
}

// randomBytes returns n incompressible bytes, the same every run.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// TestDecompressLimit checks the bound on output: exactly MaxSize bytes
// decompress, one more is ErrCorrupt, and a bomb is refused without
// inflating it.
func TestDecompressLimit(t *testing.T) {
	const limit = 256 << 10
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			dec := &Decompressor{MaxSize: limit}
			for _, tc := range []struct {
				name string
				size int
				ok   bool
			}{
				{"at the limit", limit, true},
				{"one past the limit", limit + 1, false},
				{"bomb", 16 << 20, false},
			} {
				src, err := Compress(codec, nil, make([]byte, tc.size))
				if err != nil {
					t.Fatal(err)
				}
				out, err := dec.Decompress(codec, src)
				if tc.ok {
					if err != nil || len(out) != tc.size {
						t.Fatalf("%s: %d bytes, %v", tc.name, len(out), err)
					}
					continue
				}
				wantErr(t, err, ErrCorrupt)
				if cap(dec.buf) > 2*limit {
					t.Fatalf("%s: output buffer grew to %d bytes", tc.name, cap(dec.buf))
				}
			}
		})
	}
}

func TestDecompressDefaultLimit(t *testing.T) {
	var dec Decompressor // the zero value
	if dec.limit() != DefaultMaxDecompressedSize || NewDecompressor().limit() != DefaultMaxDecompressedSize {
		t.Fatal("default limit not applied")
	}
	src, _ := Compress(CodecZstd, nil, make([]byte, DefaultMaxDecompressedSize+1))
	_, err := dec.Decompress(CodecZstd, src)
	wantErr(t, err, ErrCorrupt)
}

// TestDecompressorRecycle checks that a buffer grown for a large batch is
// not kept once the next batch comes.
func TestDecompressorRecycle(t *testing.T) {
	dec := NewDecompressor()
	big, _ := Compress(CodecLZ4, nil, make([]byte, 2*decompressRecycleCap))
	small, _ := Compress(CodecLZ4, nil, []byte("small"))
	if _, err := dec.Decompress(CodecLZ4, big); err != nil {
		t.Fatal(err)
	}
	if cap(dec.buf) <= decompressRecycleCap {
		t.Fatalf("buffer of %d bytes after a large batch", cap(dec.buf))
	}
	if _, err := dec.Decompress(CodecLZ4, small); err != nil {
		t.Fatal(err)
	}
	if cap(dec.buf) > decompressRecycleCap {
		t.Fatalf("large buffer of %d bytes kept", cap(dec.buf))
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := pattern(7, 50_000)
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			good, err := Compress(codec, nil, src)
			if err != nil {
				t.Fatal(err)
			}
			cases := map[string][]byte{
				"garbage":   []byte("this is not compressed data at all, not even a little"),
				"truncated": good[:len(good)/2],
				"flipped":   edit(good, func(b []byte) { b[len(b)/2] ^= 0xff }),
			}
			for name, in := range cases {
				out, err := NewDecompressor().Decompress(codec, in)
				if err == nil && name == "flipped" && !bytes.Equal(out, src) {
					// A codec without a checksum may decode a
					// flipped byte to other data; the batch
					// CRC is what catches that.
					continue
				}
				if err == nil {
					t.Errorf("%s: decompressed %d bytes", name, len(out))
					continue
				}
				wantErr(t, err, ErrCorrupt)
			}
		})
	}
	_, err := NewDecompressor().Decompress(Codec(6), []byte("x"))
	wantErr(t, err, ErrCorrupt)
}

// xerialFrame frames src as snappy-java's SnappyOutputStream does: the
// magic, version 1 and minimum compatible version 1, then per block a big
// endian size and a raw snappy block.
func xerialFrame(src []byte, blockSize int) []byte {
	b := append([]byte{}, xerialMagic...)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 1)
	for len(src) > 0 {
		n := min(blockSize, len(src))
		block := s2.EncodeSnappy(nil, src[:n])
		b = binary.BigEndian.AppendUint32(b, uint32(len(block)))
		b = append(b, block...)
		src = src[n:]
	}
	return b
}

func TestSnappyXerial(t *testing.T) {
	src := pattern(11, 100_000)
	frame := xerialFrame(src, xerialBlockSize) // four blocks, the last partial
	dec := NewDecompressor()
	got, err := dec.Decompress(CodecSnappy, frame)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("xerial decode gave %d bytes, want %d", len(got), len(src))
	}
	// Raw snappy of the same data decodes too.
	raw, _ := Compress(CodecSnappy, nil, src)
	if got, err := dec.Decompress(CodecSnappy, raw); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("raw snappy: %d bytes, %v", len(got), err)
	}
	if got, err := dec.Decompress(CodecSnappy, frame[:xerialHeaderSize]); err != nil || len(got) != 0 {
		t.Fatalf("header only: %d bytes, %v", len(got), err)
	}

	blockStart := xerialHeaderSize
	for name, in := range map[string][]byte{
		"truncated block size": frame[:blockStart+2],
		"block past the end":   frame[:len(frame)-1],
		"block size too large": edit(frame, func(b []byte) { binary.BigEndian.PutUint32(b[blockStart:], 1<<31) }),
		"garbage block":        cat(frame[:blockStart], []byte{0, 0, 0, 3, 0xff, 0xff, 0xff}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewDecompressor().Decompress(CodecSnappy, in)
			wantErr(t, err, ErrCorrupt)
		})
	}

	// Each block is small, the sum is not: the limit still holds.
	small := &Decompressor{MaxSize: len(src) - 1}
	_, err = small.Decompress(CodecSnappy, frame)
	wantErr(t, err, ErrCorrupt)
}

// franzCodecs maps our codecs to franz-go's.
var franzCodecs = map[Codec]kgo.CompressionCodec{
	CodecGzip:   kgo.GzipCompression(),
	CodecSnappy: kgo.SnappyCompression(),
	CodecLZ4:    kgo.Lz4Compression(),
	CodecZstd:   kgo.ZstdCompression(),
}

// TestFranzGoInterop checks both directions against franz-go's own codecs:
// what its producer compresses we decompress, and what we compress its
// consumer decompresses.
func TestFranzGoInterop(t *testing.T) {
	src := pattern(13, 80_000)
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			comp, err := kgo.DefaultCompressor(franzCodecs[codec])
			if err != nil {
				t.Fatal(err)
			}
			theirs, used := comp.Compress(new(bytes.Buffer), src)
			if Codec(used) != codec {
				t.Fatalf("franz-go used codec %d", used)
			}
			got, err := NewDecompressor().Decompress(codec, theirs)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("decompressing franz-go's %s: %d bytes, %v", codec, len(got), err)
			}

			ours, err := Compress(codec, nil, src)
			if err != nil {
				t.Fatal(err)
			}
			got, err = kgo.DefaultDecompressor().Decompress(ours, kgo.CompressionCodecType(codec))
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("franz-go decompressing our %s: %d bytes, %v", codec, len(got), err)
			}

			// A whole batch as franz-go's producer would send it:
			// kmsg records compressed by its compressor.
			var raw []byte
			for i := range 20 {
				r := kmsg.Record{Key: []byte{byte(i)}, Value: pattern(i, 700), OffsetDelta: int32(i), TimestampDelta64: int64(i)}
				r.Length = int32(len(r.AppendTo(nil)) - 1)
				raw = r.AppendTo(raw)
			}
			section, _ := comp.Compress(new(bytes.Buffer), raw)
			b := rawBatch(20, int16(codec), section)
			if _, err := ValidateProduced(b, ValidateOptions{RequireKeys: true}, nil); err != nil {
				t.Fatal(err)
			}
			records, err := readAll(b, nil)
			if err != nil || len(records) != 20 || !bytes.Equal(records[19].Value, pattern(19, 700)) {
				t.Fatalf("%d records, %v", len(records), err)
			}
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	raw := bytes.Join([][]byte{pattern(1, 16<<10), randomBytes(16 << 10)}, nil)
	for _, codec := range allCodecs[1:] {
		b.Run(codec.String(), func(b *testing.B) {
			src, _ := Compress(codec, nil, raw)
			dec := NewDecompressor()
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.Decompress(codec, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
