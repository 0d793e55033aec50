import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import sharp from 'sharp'
import type { ImageFormat } from '../../src/metadata/formats.ts'
import { SNIFF_HEAD_BYTES, sniffHead } from '../../src/metadata/sniff.ts'
import { CAMERA_TAGS, ImageFactory, type PictureFormat } from './images.ts'

/** One HTTP request as a load generator sends it (autocannon's shape). */
export interface HttpRequest {
  method: 'POST' | 'GET'
  path: string
  headers: Record<string, string>
  body?: string | Buffer
}

export interface CorpusImage {
  name: string
  path: string
  bytes: Buffer
  /** As the service's sniff decides it, and whether the sniff found the size (else ExifTool is asked for it). */
  format: ImageFormat
  sized: boolean
}

/** The bench's and the soak's images, made in code (pixels from sharp or heif-builder, camera tags written by ExifTool), in a temporary folder. */
export class Corpus {
  readonly #factory = new ImageFactory()
  readonly #dir: string

  private constructor (dir: string) {
    this.#dir = dir
  }

  static async create (): Promise<Corpus> {
    return new Corpus(await mkdtemp(join(tmpdir(), 'chat-metadata-api-bench-')))
  }

  /** A 640×480 picture with CAMERA_TAGS (a HEIC is a real container around dummy coded data). */
  async picture (format: PictureFormat, name: string): Promise<CorpusImage> {
    return await this.#save(name, format, await this.#factory.make(format, { width: 640, height: 480, tags: CAMERA_TAGS }))
  }

  /** A camera-like JPEG: grain (which is what makes a photo's file large) at a camera's quality, CAMERA_TAGS. */
  async cameraJpeg (name: string, width: number, height: number, sigma: number, quality: number): Promise<CorpusImage> {
    const noise = { type: 'gaussian' as const, mean: 128, sigma }
    const pixels = await sharp({ create: { width, height, channels: 3, background: '#808080', noise } }).jpeg({ quality }).toBuffer()
    return await this.#save(name, 'jpg', await this.#factory.rewrite(pixels, 'jpg', CAMERA_TAGS))
  }

  /** The user's images (the folder's files the sniff accepts; no subfolders). */
  async folder (dir: string): Promise<CorpusImage[]> {
    const images: CorpusImage[] = []
    for (const entry of (await readdir(dir, { withFileTypes: true })).filter((file) => file.isFile())) {
      const bytes = await readFile(join(dir, entry.name))
      const image = describe(entry.name, join(dir, entry.name), bytes)
      if (image !== undefined) images.push(image)
    }
    return images
  }

  async close (): Promise<void> {
    await this.#factory.close()
    await rm(this.#dir, { recursive: true, force: true })
  }

  async #save (name: string, extension: string, bytes: Buffer): Promise<CorpusImage> {
    const path = join(this.#dir, `${basename(name).replace(/\W+/g, '-')}.${extension}`)
    await writeFile(path, bytes)
    const image = describe(name, path, bytes)
    if (image === undefined) throw new Error(`${name}: the service's sniff does not accept it`)
    return image
  }
}

function describe (name: string, path: string, bytes: Buffer): CorpusImage | undefined {
  const sniffed = sniffHead(bytes.subarray(0, SNIFF_HEAD_BYTES), bytes.length <= SNIFF_HEAD_BYTES)
  if (sniffed === undefined) return undefined
  return { name, path, bytes, format: sniffed.format, sized: sniffed.width !== undefined && sniffed.height !== undefined }
}

/** A request to POST /v1/metadata: the image as a multipart file, or as a JSON data URI. */
export function metadataRequest (image: CorpusImage, kind: 'multipart' | 'data URI', apiKey: string): HttpRequest & { body: Buffer } {
  const request = { method: 'POST' as const, path: '/v1/metadata' }
  const authorization = `Bearer ${apiKey}`
  if (kind === 'data URI') {
    const uri = `data:${image.format === 'jpeg' ? 'image/jpeg' : `image/${image.format}`};base64,${image.bytes.toString('base64')}`
    return { ...request, headers: { authorization, 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ image: uri })) }
  }
  const boundary = '----bench-boundary-7d1f4c'
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="${basename(image.path)}"\r\ncontent-type: application/octet-stream\r\n\r\n`
  return {
    ...request,
    headers: { authorization, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.concat([Buffer.from(head), image.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)])
  }
}

/** Sends one such request: its status and the camera make it answered. */
export async function postImage (url: string, request: HttpRequest & { body: Buffer }): Promise<{ status: number, make: unknown }> {
  const response = await fetch(`${url}${request.path}`, { method: request.method, headers: request.headers, body: request.body })
  const answer = await response.json() as { camera?: { make?: unknown } }
  return { status: response.status, make: answer.camera?.make }
}
