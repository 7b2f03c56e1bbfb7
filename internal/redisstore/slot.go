package redisstore

import "strings"

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// Slot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag (the text between the first '{' and the next '}', when not empty) or
// of the whole key, modulo 16384, as Redis computes it. Every key a script
// is given must have the same slot.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return tagSlot(key)
}

// tagSlot is the slot of a hash tag's content.
func tagSlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^tag[i]]
	}
	return int(crc) % slotCount
}

// crc16Table is the table of CRC16 XMODEM (polynomial 0x1021), Redis
// Cluster's key hash.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
