/**
 * npm run test:machine (and first thing in npm test, as its pretest): what the tests need from the machine besides
 * node_modules, checked in a second. Missing parts are installed with apt-get when this runs as root on Debian;
 * otherwise, or with TEST_MACHINE=check, it stops at once, printing the command that installs them.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants, existsSync, rmSync, writeFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'

interface Need {
  /** The Debian package that provides it. */
  debian: string
  /** Why the tests need it. */
  why: string
  present: () => boolean
}

/** An executable by this name on the PATH, or in the sbin directories root's PATH has and others' may not. */
function command (name: string): () => boolean {
  return () => [...(process.env['PATH'] ?? '').split(delimiter), '/usr/sbin', '/sbin'].some((dir) => executable(join(dir, name)))
}

/** The tests that use these look for them at fixed paths (test/docs.test.ts, test/gateway.test.ts). */
function file (...paths: string[]): () => boolean {
  return () => paths.some(executable)
}

function executable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

const NEEDS: Need[] = [
  { debian: 'perl', why: 'exiftool-vendored runs the ExifTool Perl script it bundles', present: command('perl') },
  { debian: 'chromium', why: 'test/docs.test.ts drives the docs page in /usr/bin/chromium', present: file('/usr/bin/chromium') },
  { debian: 'nginx', why: 'test/gateway.test.ts runs the gateway\'s configuration in nginx', present: file('/usr/sbin/nginx', '/usr/bin/nginx') },
  { debian: 'docker-compose', why: 'test/gateway.test.ts validates docker-compose.yml with it', present: command('docker-compose') },
  { debian: 'openssl', why: 'the time-stamp authority of the signed test images', present: command('openssl') },
  { debian: 'curl', why: 'test/readme.test.ts runs the README\'s curl commands', present: command('curl') },
  // The tests start a Redis of their own (test/support/global-setup.ts) unless they are given one.
  ...(process.env['TEST_REDIS_URL'] === undefined
    ? [{ debian: 'redis-server', why: 'the tests\' private Redis, started and stopped by the test run', present: command('redis-server') }]
    : [])
]

const missing = NEEDS.filter((need) => !need.present())
if (missing.length === 0) process.exit(0)

const packages = missing.map((need) => need.debian)
const list = missing.map((need) => `  ${need.debian}: ${need.why}`).join('\n')
const installCommand = `apt-get install -y --no-install-recommends ${packages.join(' ')}`
const mayInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get') && process.env['TEST_MACHINE'] !== 'check'

if (!mayInstall) {
  process.stderr.write(`The tests need these, missing on this machine:\n${list}\n` +
    `Install them (Debian) with:\n  ${process.getuid?.() === 0 ? '' : 'sudo '}${installCommand}\n` +
    'As root on Debian, npm test installs them itself (unless TEST_MACHINE=check).\n')
  process.exit(1)
}

process.stdout.write(`The tests need these, missing on this machine:\n${list}\nInstalling them: apt-get update && ${installCommand}\n`)
// Installing nginx or redis-server would start their daemons (port 80, Redis's 6379) unless a policy says not to:
// the tests start their own, so none is started (the policy-rc.d that Debian container images carry, for the install).
const policy = '/usr/sbin/policy-rc.d'
const ownPolicy = !existsSync(policy)
if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 })
let failed: string | undefined
try {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', '--no-install-recommends', ...packages]]) {
    const result = spawnSync('apt-get', args, { stdio: 'inherit', env })
    if (result.status !== 0) {
      failed = `apt-get ${args.join(' ')} failed (exit ${String(result.status)})`
      break
    }
  }
} finally {
  if (ownPolicy) rmSync(policy, { force: true })
}
if (failed !== undefined) {
  process.stderr.write(`${failed}: install them yourself with\n  ${installCommand}\n`)
  process.exit(1)
}

const still = missing.filter((need) => !need.present())
if (still.length > 0) {
  process.stderr.write(`Still missing after the install: ${still.map((need) => need.debian).join(', ')}\n`)
  process.exit(1)
}
process.stdout.write(`Installed: ${packages.join(' ')}\n`)
