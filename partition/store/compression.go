package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression codec, attribute bits 0-2.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone Codec = iota
	CodecGzip
	CodecSnappy
	CodecLZ4
	CodecZstd
)

// String returns the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "Codec(" + strconv.Itoa(int(c)) + ")"
}

func (c Codec) valid() bool { return c >= CodecNone && c <= CodecZstd }

// DefaultMaxDecompressedSize is the default bound on what one batch's
// records may decompress to: Decompressor.MaxSize when it is 0.
const DefaultMaxDecompressedSize = 64 << 20

// decompressRecycleCap is the largest output buffer a Decompressor keeps for
// the next call; a larger one, grown for an unusually large batch, is
// dropped so an idle Decompressor does not pin it.
const decompressRecycleCap = 4 << 20

// Decompressor decompresses batches' records sections, reusing its output
// buffer and its codecs' readers from call to call; it also lends
// ForEachRecord its scratch Record. The zero value is ready to use (with
// MaxSize DefaultMaxDecompressedSize). A Decompressor is not safe for
// concurrent use: keep one per goroutine or actor.
type Decompressor struct {
	// MaxSize bounds the decompressed size of one records section. Input
	// that would inflate beyond it is ErrCorrupt, read no further than
	// that, so a compression bomb costs at most MaxSize of memory. 0 means
	// DefaultMaxDecompressedSize; above math.MaxInt32 counts as math.MaxInt32.
	MaxSize int

	buf []byte // output, valid until the next call

	src     bytes.Reader
	gz      gzip.Reader
	lz      *lz4.Reader
	zd      *zstd.Decoder
	zdLimit int // the MaxSize zd was made with

	rec Record // ForEachRecord's scratch record
}

// NewDecompressor returns a Decompressor with the default MaxSize.
func NewDecompressor() *Decompressor {
	return &Decompressor{MaxSize: DefaultMaxDecompressedSize}
}

func (d *Decompressor) limit() int {
	switch {
	case d.MaxSize <= 0:
		return DefaultMaxDecompressedSize
	case d.MaxSize > math.MaxInt32:
		return math.MaxInt32 // records' lengths are int32s anyway
	}
	return d.MaxSize
}

// Decompress decompresses src, a records section compressed with codec. The
// result is valid until the next call on d; CodecNone returns src itself.
// Snappy is read both raw and in the xerial framing the Java client writes.
// Corrupt input, an unknown codec and output beyond MaxSize are ErrCorrupt.
func (d *Decompressor) Decompress(codec Codec, src []byte) ([]byte, error) {
	if cap(d.buf) > decompressRecycleCap {
		d.buf = nil
	}
	limit := d.limit()
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		d.src.Reset(src)
		if err := d.gz.Reset(&d.src); err != nil {
			return nil, corruptf("gzip: %v", err)
		}
		return d.readAll(&d.gz, limit, codec)
	case CodecSnappy:
		return d.snappy(src, limit)
	case CodecLZ4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.src.Reset(src)
		d.lz.Reset(&d.src)
		out, err := d.readAll(d.lz, limit, codec)
		d.lz.Reset(nil) // return its block buffer to lz4's pool
		return out, err
	case CodecZstd:
		return d.zstd(src, limit)
	}
	return nil, corruptf("unknown compression codec %d", codec)
}

// readAll reads r to its end into d.buf, failing once it has read more than
// limit bytes.
func (d *Decompressor) readAll(r io.Reader, limit int, codec Codec) ([]byte, error) {
	buf := d.buf[:0]
	for stalls := 0; ; {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, corruptf("%s: records decompress to more than %d bytes", codec, limit)
			}
			// One byte past the limit tells a stream that is exactly
			// limit bytes from a larger one.
			grow := min(max(cap(buf), 64<<10), limit+1-len(buf))
			buf = slices.Grow(buf, grow)
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, corruptf("%s: records decompress to more than %d bytes", codec, limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, corruptf("%s: %v", codec, err)
		}
		if n == 0 {
			if stalls++; stalls > 100 {
				return nil, corruptf("%s: %v", codec, io.ErrNoProgress)
			}
		} else {
			stalls = 0
		}
	}
	d.buf = buf
	return buf, nil
}

// zstd decodes with a decoder bounded to limit: it refuses a frame that
// declares a larger size before allocating for it, and stops one that grows
// beyond it.
func (d *Decompressor) zstd(src []byte, limit int) ([]byte, error) {
	if d.zd == nil || d.zdLimit != limit {
		zd, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1), // no goroutines: DecodeAll runs on ours
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)),
		)
		if err != nil {
			return nil, err // only bad options: a bug
		}
		d.zd, d.zdLimit = zd, limit
	}
	out, err := d.zd.DecodeAll(src, d.buf[:0])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, corruptf("zstd: records decompress to more than %d bytes", limit)
		}
		return nil, corruptf("zstd: %v", err)
	}
	if len(out) > limit {
		return nil, corruptf("zstd: records decompress to more than %d bytes", limit)
	}
	d.buf = out
	return out, nil
}

// xerialMagic starts snappy in the xerial (snappy-java) stream framing:
// the magic, then a version and a minimum compatible version, int32 each.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10 // snappy-java's block size
)

// snappy decodes raw snappy (what franz-go, librdkafka and sarama send) or
// xerial framed snappy (what the Java client sends), as franz-go and
// snappy-java tell them apart: by the xerial magic.
func (d *Decompressor) snappy(src []byte, limit int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return d.xerial(src[xerialHeaderSize:], limit)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, corruptf("snappy: %v", err)
	}
	if n > limit {
		return nil, corruptf("snappy: records decompress to more than %d bytes", limit)
	}
	out, err := s2.Decode(d.grow(n), src)
	if err != nil {
		return nil, corruptf("snappy: %v", err)
	}
	d.buf = out
	return out, nil
}

// xerial decodes the blocks of an xerial stream, each a big endian int32
// size and a raw snappy block. It sums the blocks' decoded sizes first, so
// that it checks the limit and sizes the output before decoding anything.
func (d *Decompressor) xerial(src []byte, limit int) ([]byte, error) {
	total := 0
	for rem := src; len(rem) > 0; {
		if len(rem) < 4 {
			return nil, corruptf("snappy: truncated xerial block size")
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return nil, corruptf("snappy: xerial block of %d bytes, %d remain", size, len(rem))
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return nil, corruptf("snappy: %v", err)
		}
		if total += n; total > limit {
			return nil, corruptf("snappy: records decompress to more than %d bytes", limit)
		}
		rem = rem[size:]
	}
	out := d.grow(total)[:0]
	for len(src) > 0 {
		size := binary.BigEndian.Uint32(src)
		block := src[4 : 4+size]
		src = src[4+size:]
		n, _ := s2.DecodedLen(block)
		// s2 decodes in place when dst has the block's decoded length.
		if _, err := s2.Decode(out[len(out):len(out)+n], block); err != nil {
			return nil, corruptf("snappy: %v", err)
		}
		out = out[:len(out)+n]
	}
	d.buf = out
	return out, nil
}

// grow returns d.buf resliced to n bytes, reallocated if it is too small.
func (d *Decompressor) grow(n int) []byte {
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	return d.buf[:n]
}

// Compression. Encoders are pooled per codec; each is bounded in size.
//
// NB: the codecs' parameters follow franz-go's producer, which interoperates
// with every Kafka client: gzip at the default level, raw snappy (readers
// accept it as well as xerial framing: snappy-java falls back to raw when the
// magic is absent), an LZ4 frame with independent 64 KiB blocks (the Java
// client's block size), and zstd frames with a 64 KiB window.

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipEncoder struct {
	w   *gzip.Writer
	out appendWriter
}

type lz4Encoder struct {
	w   *lz4.Writer
	out appendWriter
}

var (
	gzipEncoders = sync.Pool{New: func() any {
		e := new(gzipEncoder)
		e.w, _ = gzip.NewWriterLevel(&e.out, gzip.DefaultCompression)
		return e
	}}
	lz4Encoders = sync.Pool{New: func() any {
		e := new(lz4Encoder)
		e.w = lz4.NewWriter(&e.out)
		_ = e.w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4.Fast))
		return e
	}}
	zstdEncoders = sync.Pool{New: func() any {
		e, _ := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(64<<10),
			zstd.WithZeroFrames(true), // an empty input still makes a frame
		)
		return e
	}}
)

// errUnknownCodec is returned by Compress for a codec Kafka does not define.
var errUnknownCodec = errors.New("store: unknown compression codec")

// Compress appends src compressed with codec to dst and returns the extended
// slice (CodecNone appends src as it is). It is safe for concurrent use.
func Compress(codec Codec, dst, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		e := gzipEncoders.Get().(*gzipEncoder)
		defer gzipEncoders.Put(e)
		e.out.b = dst
		e.w.Reset(&e.out)
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		dst, e.out.b = e.out.b, nil
		return dst, err
	case CodecSnappy:
		n := s2.MaxEncodedLen(len(src))
		if n < 0 {
			return dst, s2.ErrTooLarge
		}
		dst = slices.Grow(dst, n)
		out := s2.EncodeSnappy(dst[len(dst):len(dst)+n], src)
		return dst[:len(dst)+len(out)], nil
	case CodecLZ4:
		e := lz4Encoders.Get().(*lz4Encoder)
		defer lz4Encoders.Put(e)
		e.out.b = dst
		e.w.Reset(&e.out)
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		dst, e.out.b = e.out.b, nil
		return dst, err
	case CodecZstd:
		e := zstdEncoders.Get().(*zstd.Encoder)
		defer zstdEncoders.Put(e)
		return e.EncodeAll(src, dst), nil
	}
	return dst, errUnknownCodec
}
