import { execFile } from 'node:child_process'
import { createPrivateKey, randomUUID, sign as signBytes, webcrypto, type KeyObject } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import * as x509 from '@peculiar/x509'
import { JPEG, PNG } from '@trustnxt/c2pa-ts/asset'
import type { Signer } from '@trustnxt/c2pa-ts/cose'
import {
  ActionAssertion,
  ClaimVersion,
  DataHashAssertion,
  IngredientAssertion,
  ManifestStore,
  RelationshipType,
  type Action
} from '@trustnxt/c2pa-ts/manifest'
import type { TimestampProvider } from '@trustnxt/c2pa-ts/rfc3161'
import { TimeStampResp, type TimeStampReq } from 'pkijs'

/**
 * Content Credentials made by the tests: a certificate chain generated here (@peculiar/x509), manifests written and
 * signed by @trustnxt/c2pa-ts, and RFC 3161 time-stamps from OpenSSL's own time-stamp authority (`openssl ts
 * -reply`), standing in for a public TSA the tests cannot reach. The service validates them with c2pa-rs, a
 * different implementation, so a manifest that passes here passes for reasons that are not the writer's own.
 */

x509.cryptoProvider.set(webcrypto)

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
const DAY_MS = 86_400_000
/** EKU for C2PA claim signing accepted by c2pa-rs (id-kp-emailProtection, as Adobe's test certificates use). */
const EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4'
const TIME_STAMPING = '1.3.6.1.5.5.7.3.8'
/** COSE's ES256. */
const ES256 = -7

export const DIGITAL_CAPTURE = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture'
export const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia'
export const COMPOSITE_WITH_TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia'

export interface Credential {
  certificate: x509.X509Certificate
  /** The chain sent with signatures, without the root. */
  chain: x509.X509Certificate[]
  keys: webcrypto.CryptoKeyPair
  /** The private key for node:crypto. */
  key: KeyObject
}

/** A C2PA action; c2pa-ts types names and source types as its own enums, C2PA leaves them open strings. */
export interface TestAction {
  action: string
  digitalSourceType?: string
}

export interface ManifestOptions {
  signer: Credential
  actions: TestAction[]
  title?: string
  claimGenerator?: { name: string, version: string }
  claimVersion?: 'v1' | 'v2'
  timeStamped?: boolean
  /** Ingredients (parentOf the first, componentOf the rest) recorded by title. */
  ingredients?: string[]
}

/** A test PKI: a root CA with a claim signer and a time-stamp authority below it, and an unrelated root's signer. */
export class TestPki {
  readonly root: Credential
  readonly signer: Credential
  readonly tsa: Credential
  /** A signer chained to a root nobody configured. */
  readonly stranger: Credential
  readonly #dir: string

  private constructor (dir: string, root: Credential, signer: Credential, tsa: Credential, stranger: Credential) {
    this.#dir = dir
    this.root = root
    this.signer = signer
    this.tsa = tsa
    this.stranger = stranger
  }

  static async create (): Promise<TestPki> {
    const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-pki-'))
    const root = await certificateAuthority('CN=Test Root CA,O=chat-metadata-api tests')
    const signer = await endEntity(root, 'CN=Newsroom Signing Key,O=Example Newsroom,C=DE', EMAIL_PROTECTION)
    const tsa = await endEntity(root, 'CN=Test Time-Stamp Authority,O=chat-metadata-api tests', TIME_STAMPING)
    const strangerRoot = await certificateAuthority('CN=Unknown Root CA,O=Nobody')
    const stranger = await endEntity(strangerRoot, 'CN=Unknown Signer,O=Nobody', EMAIL_PROTECTION)
    return new TestPki(dir, root, signer, tsa, stranger)
  }

  /** The root's PEM, for C2PA_TRUST_ANCHORS. */
  get trustAnchorsPem (): string {
    return this.root.certificate.toString('pem')
  }

  /** Writes the trust anchors to a file, as a deployment would mount them. */
  async writeTrustAnchors (): Promise<string> {
    const path = join(this.#dir, 'trust-anchors.pem')
    await writeFile(path, this.trustAnchorsPem)
    return path
  }

  /** Adds a signed manifest to a JPEG or PNG. */
  async sign (image: Buffer, options: ManifestOptions): Promise<Buffer> {
    const asset = isPng(image) ? new PNG(image) : new JPEG(image)
    const signer = claimSigner(options.signer)
    const store = new ManifestStore()
    const manifest = store.createManifest({
      claimVersion: options.claimVersion === 'v2' ? ClaimVersion.V2 : ClaimVersion.V1,
      assetFormat: isPng(image) ? 'image/png' : 'image/jpeg',
      instanceID: `xmp:iid:${randomUUID()}`,
      defaultHashAlgorithm: 'SHA-256',
      signer
    })
    const generator = options.claimGenerator ?? { name: 'chat-metadata-api-tests', version: '1.0' }
    manifest.claim!.claimGeneratorName = generator.name
    manifest.claim!.claimGeneratorVersion = generator.version
    if (options.title !== undefined) manifest.claim!.title = options.title
    const dataHash = DataHashAssertion.create('SHA-256')
    manifest.addAssertion(dataHash)
    const actions = new ActionAssertion()
    actions.actions = options.actions as Action[]
    manifest.addAssertion(actions)
    for (const [index, title] of (options.ingredients ?? []).entries()) {
      const ingredient = IngredientAssertion.create(title, 'image/jpeg', `xmp:iid:${randomUUID()}`)
      ingredient.relationship = index === 0 ? RelationshipType.ParentOf : RelationshipType.ComponentOf
      manifest.addAssertion(ingredient)
    }
    await asset.ensureManifestSpace(store.measureSize())
    await dataHash.updateWithAsset(asset)
    await manifest.sign(signer, options.timeStamped === true ? this.#timeStampAuthority() : undefined)
    await asset.writeManifestJUMBF(store.getBytes())
    return Buffer.from(await asset.getDataRange())
  }

  async close (): Promise<void> {
    await rm(this.#dir, { recursive: true, force: true })
  }

  /** OpenSSL's TSA, signing with the test TSA's key. */
  #timeStampAuthority (): TimestampProvider {
    const dir = this.#dir
    const tsa = this.tsa
    const root = this.root
    return {
      async getSignedTimestamp (request: TimeStampReq): Promise<TimeStampResp> {
        const name = randomUUID()
        const file = (suffix: string): string => join(dir, `${name}.${suffix}`)
        await writeFile(file('req'), Buffer.from(request.toSchema().toBER()))
        await writeFile(file('crt'), tsa.certificate.toString('pem'))
        await writeFile(file('key'), tsa.key.export({ type: 'pkcs8', format: 'pem' }))
        await writeFile(file('chain'), root.certificate.toString('pem'))
        await writeFile(file('serial'), '01\n')
        await writeFile(file('cnf'), [
          '[tsa]', 'default_tsa = test_tsa', '[test_tsa]',
          `serial = ${file('serial')}`, `certs = ${file('chain')}`,
          // A private policy arc: TSA policies are the authority's own.
          'default_policy = 1.3.6.1.4.1.55555.1', 'digests = sha256', 'signer_digest = sha256', 'ess_cert_id_alg = sha256',
          'accuracy = secs:1', 'ordering = no', 'tsa_name = no', 'ess_cert_id_chain = no', ''
        ].join('\n'))
        await promisify(execFile)('openssl', ['ts', '-reply', '-config', file('cnf'), '-queryfile', file('req'),
          '-signer', file('crt'), '-inkey', file('key'), '-out', file('resp')])
        const response = TimeStampResp.fromBER(await readFile(file('resp')))
        for (const suffix of ['req', 'crt', 'key', 'chain', 'serial', 'cnf', 'resp']) await rm(file(suffix), { force: true })
        return response
      }
    }
  }
}

/**
 * A c2pa-ts Signer that signs with node:crypto in the IEEE P1363 form (r‖s) COSE requires for ECDSA; c2pa-ts 0.9's
 * own LocalSigner writes DER, which c2pa-rs rejects (signingCredential.invalid).
 */
function claimSigner (credential: Credential): Signer {
  return {
    algorithm: ES256,
    certificate: credential.certificate,
    chainCertificates: credential.chain,
    sign: async (payload) => new Uint8Array(signBytes('sha256', payload, { key: credential.key, dsaEncoding: 'ieee-p1363' }))
  }
}

async function certificateAuthority (name: string): Promise<Credential> {
  const keys = await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as webcrypto.CryptoKeyPair
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 365 * DAY_MS),
    keys,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey)
    ]
  })
  return { certificate, chain: [], keys, key: await nodeKey(keys) }
}

async function endEntity (issuer: Credential, subject: string, extendedKeyUsage: string): Promise<Credential> {
  const keys = await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as webcrypto.CryptoKeyPair
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: issuer.certificate.subject,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 365 * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([extendedKeyUsage], true),
      await x509.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey)
    ]
  })
  return { certificate, chain: [issuer.certificate], keys, key: await nodeKey(keys) }
}

async function nodeKey (keys: webcrypto.CryptoKeyPair): Promise<KeyObject> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
}

/** A random positive serial number (a leading 01 keeps the DER integer's sign bit clear). */
function serial (): string {
  return `01${Buffer.from(webcrypto.getRandomValues(new Uint8Array(8))).toString('hex')}`
}

function isPng (image: Buffer): boolean {
  return image.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
}

/** The same image with one byte of pixel data changed, the manifest untouched. */
export function tamperedPixels (signed: Buffer): Buffer {
  const copy = Buffer.from(signed)
  // Near the end: a JPEG's entropy-coded data or a PNG's last IDAT, well after the manifest, before the trailer.
  copy[copy.length - 40] = copy[copy.length - 40]! ^ 0x01
  return copy
}
