// Approving a change signs GetChange's approvalPayload bytes with the approver's Ed25519 key,
// here in the page: the key file is read with a file input and never leaves the browser.
// The same signature as `smbfleetctl changes approve` (common/approval_signing.cc).

function pemBody(pem, label) {
  const m = pem.match(new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`));
  if (!m) return null;
  const bin = atob(m[1].replace(/\s+/g, ""));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

export function base64ToBytes(b64) {
  const bin = atob(String(b64 || "").replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes) {
  let bin = "";
  for (const b of new Uint8Array(bytes)) bin += String.fromCharCode(b);
  return btoa(bin);
}

function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

// KeyId: the first 16 hex digits of SHA-256 of the raw 32-byte public key.
export async function keyIdOf(publicRaw) {
  return hex(await crypto.subtle.digest("SHA-256", publicRaw)).slice(0, 16);
}

// Reads the PEM text `smbfleetctl keys init` writes (PKCS#8 "PRIVATE KEY") into a signing key
// and the key id. Errors name what is wrong with the file.
export async function loadApproverKey(pemText) {
  if (!crypto.subtle) throw new Error("this page is not in a secure context: signing needs HTTPS");
  const der = pemBody(pemText, "PRIVATE KEY");
  if (!der) throw new Error("the key file is not a PEM private key (-----BEGIN PRIVATE KEY-----)");
  let extractable;
  let key;
  try {
    // The public half, for the key id: a JWK export of a copy that is dropped right after.
    extractable = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
    key = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
  } catch {
    throw new Error("the key file is not an Ed25519 private key (make one with `smbfleetctl keys init`)");
  }
  const jwk = await crypto.subtle.exportKey("jwk", extractable);
  const publicRaw = base64ToBytes(jwk.x);
  if (publicRaw.length !== 32) throw new Error("the key file's public key is not 32 bytes");
  return { key, keyId: await keyIdOf(publicRaw) };
}

// The OrderSignature of an ApproveChange request.
export async function signPayload(loaded, approver, payloadBase64) {
  const sig = await crypto.subtle.sign({ name: "Ed25519" }, loaded.key, base64ToBytes(payloadBase64));
  return { approver, keyId: loaded.keyId, signature: bytesToBase64(sig) };
}
