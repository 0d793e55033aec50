import { randomBytes } from 'node:crypto'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSampling } from '../support/proc.ts'
import { startService, stopService, type ServiceProcess } from '../support/servers.ts'

// A real server started as `npm start` starts it, given bursts of large images as JSON data URIs and multipart uploads
// at once: the service and its ExifTool children together stay within the share of a container's memory that
// docs/deployment.md budgets for them, and a second burst does not take more than the first (what one leaves, the
// next reuses).

const KEY = 'memory-test-key'

/** docs/deployment.md, "Memory": a container's memory for the Node process and its ExifTool children, scratch files apart. */
const PROCESSES_BUDGET_MB = 512

describe('memory under bursts of large images', () => {
  let service: ServiceProcess
  let body: string
  let upload: FormData
  beforeAll(async () => {
    // Noise compresses badly: a 14 MB JPEG, a 19 MB body.
    const jpeg = await sharp(randomBytes(3000 * 2500 * 3), { raw: { width: 3000, height: 2500, channels: 3 } }).withExif({ IFD0: { Make: 'Burst', Model: 'Noise 1' } }).jpeg({ quality: 95 }).toBuffer()
    body = JSON.stringify({ image: `data:image/jpeg;base64,${jpeg.toString('base64')}` })
    upload = new FormData()
    upload.append('image', new Blob([jpeg], { type: 'image/jpeg' }), 'burst.jpg')
    service = await startService({ API_KEYS: KEY, RATE_LIMIT_METADATA_PER_MIN: '0', EXIFTOOL_PROCS: '2' })
  })
  afterAll(async () => { await stopService(service) })

  it('stays within the processes\' share of the container limit, and a second burst takes no more than the first', async () => {
    const burst = async (): Promise<{ peakMB: number, exiftoolMB: number }> => {
      const stop = await startSampling(service.pid, 10)
      // As data URIs and as multipart uploads at once: both paths' buffers.
      const answers = await Promise.allSettled(Array.from({ length: 24 }, async (_, index) => (await fetch(`${service.url}/v1/metadata`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, ...index % 2 === 0 ? { 'content-type': 'application/json' } : {} },
        body: index % 2 === 0 ? body : upload
      })).status))
      const usage = await stop()
      expect(answers.map((answer) => answer.status === 'fulfilled' ? answer.value : String(answer.reason))).toEqual(Array(24).fill(200))
      return { peakMB: usage.peakRssMB, exiftoolMB: usage.peakChildrenRssMB }
    }
    const first = await burst()
    const second = await burst()
    const seen = `first burst: peak ${first.peakMB.toFixed(0)} MB + ExifTool ${first.exiftoolMB.toFixed(0)} MB; second: ${second.peakMB.toFixed(0)} + ${second.exiftoolMB.toFixed(0)} MB`
    console.log(seen)
    for (const { peakMB, exiftoolMB } of [first, second]) expect(peakMB + exiftoolMB, seen).toBeLessThan(PROCESSES_BUDGET_MB)
    // Memory the first burst left behind is reused by the second, not added to (a leak would add its share each time).
    expect(second.peakMB, seen).toBeLessThan(first.peakMB * 1.2)
  })
})
