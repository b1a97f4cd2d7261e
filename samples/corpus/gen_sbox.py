"""Writes aes_sbox.inc: the AES S-box computed from its definition in FIPS-197 section 5.1.1
(multiplicative inverse in GF(2^8) modulo x^8+x^4+x^3+x+1, then the affine transformation)."""


def mul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = ((a << 1) ^ 0x11B) if a & 0x80 else a << 1
        b >>= 1
    return r


def affine(x: int) -> int:
    r = 0
    for i in range(8):
        bit = (x >> i) ^ (x >> ((i + 4) % 8)) ^ (x >> ((i + 5) % 8)) ^ (x >> ((i + 6) % 8)) \
            ^ (x >> ((i + 7) % 8)) ^ (0x63 >> i)
        r |= (bit & 1) << i
    return r


inv = [0] + [next(b for b in range(1, 256) if mul(a, b) == 1) for a in range(1, 256)]
sbox = [affine(inv[x]) for x in range(256)]
assert sbox[0x00] == 0x63 and sbox[0x53] == 0xED     # the standard's worked examples
rows = ",\n    ".join(", ".join(f"0x{v:02x}" for v in sbox[i:i + 16]) for i in range(0, 256, 16))
with open("aes_sbox.inc", "w") as f:
    f.write(f"/* AES S-box computed from FIPS-197 5.1.1 by gen_sbox.py. */\n    {rows}\n")
