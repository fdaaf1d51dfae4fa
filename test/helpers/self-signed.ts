/**
 * A self-signed TLS certificate for a host name, made with node:crypto alone (no `openssl` on PATH):
 * an ECDSA P-256 key, and an X.509 v3 certificate signed by it, written in DER by the few ASN.1 rules
 * it needs (RFC 5280): the name as subject and issuer (CN), a validity from an hour ago to a day on,
 * basicConstraints CA:TRUE (a client trusts it as its own anchor, as `openssl req -x509` makes them)
 * and the name again as a subjectAltName, which TLS clients check.
 *
 *   const { cert, key } = selfSigned("gates.example.test");   // both PEM
 */
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";

/** A DER element: tag, length (short or long form), content. */
function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

const sequence = (...items: Buffer[]): Buffer => der(0x30, ...items);

/** An OBJECT IDENTIFIER from its dotted form. */
function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >> 7; v > 0; v >>= 7) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
}

/** UTCTime, `YYMMDDHHMMSSZ` (dates before 2050). */
function utcTime(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, "").slice(2, 14);
  return der(0x17, Buffer.from(`${text}Z`, "ascii"));
}

/** A Name of one CN. */
const commonName = (name: string): Buffer =>
  sequence(der(0x31, sequence(oid("2.5.4.3"), der(0x0c, Buffer.from(name, "utf8")))));

const ECDSA_WITH_SHA256 = sequence(oid("1.2.840.10045.4.3.2"));

export function selfSigned(hostname: string): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  // A positive serial of 16 random bytes (its first bit cleared: INTEGER is signed).
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const now = Date.now();
  const extensions = sequence(
    // basicConstraints, critical: CA:TRUE.
    sequence(oid("2.5.29.19"), der(0x01, Buffer.from([0xff])), der(0x04, sequence(der(0x01, Buffer.from([0xff]))))),
    // subjectAltName: the DNS name ([2] IMPLICIT IA5String).
    sequence(oid("2.5.29.17"), der(0x04, sequence(der(0x82, Buffer.from(hostname, "ascii"))))),
  );
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))), // [0] version: v3
    der(0x02, serial),
    ECDSA_WITH_SHA256,
    commonName(hostname),
    sequence(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 86_400_000))),
    commonName(hostname),
    spki,
    der(0xa3, extensions), // [3] extensions
  );
  const signature = sign("sha256", tbs, privateKey); // DER (r, s), as X.509 wants it
  const certificate = sequence(tbs, ECDSA_WITH_SHA256, der(0x03, Buffer.from([0]), signature));
  const pem = (label: string, body: Buffer): string =>
    `-----BEGIN ${label}-----\n${body
      .toString("base64")
      .match(/.{1,64}/g)
      ?.join("\n")}\n-----END ${label}-----\n`;
  return {
    cert: pem("CERTIFICATE", certificate),
    key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}
