import { describe, expect, it } from 'vitest'
import { contentCredentialsFrom } from '../../src/metadata/provenance/content-credentials.ts'
import { manifestReportFrom, type ManifestReport } from '../../src/metadata/provenance/manifest-report.ts'

// The mapping from c2pa-rs's reader output to the API, on shapes the end-to-end tests cannot easily make.
function report (overrides: Partial<ManifestReport> = {}): ManifestReport {
  return {
    claimGenerator: 'Camera/1.0',
    claimGeneratorInfo: [],
    title: null,
    actions: [],
    ingredientCount: 0,
    signer: { issuer: 'Maker', commonName: 'Key' },
    signedAt: null,
    validationState: 'Trusted',
    failureCodes: [],
    successCodes: ['signingCredential.trusted', 'claimSignature.validated', 'assertion.dataHash.match'],
    ...overrides
  }
}

describe('contentCredentialsFrom', () => {
  it('keeps integrity apart from trust: an expired or revoked signer leaves the bytes valid, and untrusted', () => {
    for (const code of ['signingCredential.expired', 'signingCredential.ocsp.revoked']) {
      const credentials = contentCredentialsFrom(report({ validationState: 'Invalid', failureCodes: [code] }))
      expect(credentials).toMatchObject({ integrity: 'valid', trusted: false, validation_codes: [code] })
    }
  })

  it('is invalid when the signature itself is unusable, or any hash or reference fails', () => {
    for (const codes of [['signingCredential.invalid', 'claimSignature.mismatch'], ['assertion.hashedURI.mismatch'], ['assertion.bmffHash.mismatch']]) {
      expect(contentCredentialsFrom(report({ validationState: 'Invalid', failureCodes: codes })).integrity).toBe('invalid')
    }
  })

  it('does not take a verdict of Invalid with no failure named as valid', () => {
    expect(contentCredentialsFrom(report({ validationState: 'Invalid', failureCodes: [] })).integrity).toBe('invalid')
  })

  it('declares ai_generated only for the IPTC generative-AI source types, http or https', () => {
    const of = (...types: string[]): boolean => contentCredentialsFrom(report({ actions: types.map((type) => ({ action: 'c2pa.created', digitalSourceType: type })) })).ai_generated
    expect(of('https://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia')).toBe(true)
    expect(of('http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture', 'http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia')).toBe(true)
    expect(of('http://cv.iptc.org/newscodes/digitalsourcetype/algorithmicMedia')).toBe(false)
    expect(of('http://example.com/trainedAlgorithmicMedia')).toBe(false)
    expect(of()).toBe(false)
  })

  it('lists each digital source type once, in the order the actions declare them', () => {
    const capture = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture'
    const credentials = contentCredentialsFrom(report({
      actions: [{ action: 'c2pa.created', digitalSourceType: capture }, { action: 'c2pa.edited', digitalSourceType: null }, { action: 'c2pa.filtered', digitalSourceType: capture }]
    }))
    expect(credentials.actions).toEqual(['c2pa.created', 'c2pa.edited', 'c2pa.filtered'])
    expect(credentials.digital_source_types).toEqual([capture])
  })

  it('names the generator by name/version only when the claim records no claim_generator', () => {
    expect(contentCredentialsFrom(report({ claimGenerator: null, claimGeneratorInfo: [{ name: 'App', version: '2' }] })).claim_generator).toBe('App/2')
    expect(contentCredentialsFrom(report({ claimGenerator: null, claimGeneratorInfo: [{ name: 'App', version: null }] })).claim_generator).toBe('App')
    expect(contentCredentialsFrom(report({ claimGenerator: null })).claim_generator).toBeNull()
  })
})

describe('manifestReportFrom', () => {
  it('reads what it needs whatever else the manifest holds, and treats the wrong shapes as absent', () => {
    const manifest = {
      claim_generator: '  ',
      claim_generator_info: [{ name: 'Gen', version: '1' }, { version: 'no name' }, 'junk'],
      title: 7,
      assertions: [
        { label: 'c2pa.actions.v2', data: { actions: [{ action: 'c2pa.created', digitalSourceType: 'http://x' }, { noAction: true }] } },
        { label: 'c2pa.actions', data: { actions: 'not a list' } },
        { label: 'stds.schema-org.CreativeWork', data: { actions: [{ action: 'not.an.action.assertion' }] } }
      ],
      ingredients: [{}, {}],
      signature_info: { issuer: 'Org', common_name: 'CN', time: '2024-05-01T08:00:05+00:00' }
    }
    const store = new Map<string, unknown>([['validation_state', 'Valid'], ['validation_results', { activeManifest: { failure: [{ code: 'a' }, { code: 'a' }, { nope: 1 }], success: 'junk' } }]])
    expect(manifestReportFrom(manifest, store)).toEqual({
      claimGenerator: null,
      claimGeneratorInfo: [{ name: 'Gen', version: '1' }],
      title: null,
      actions: [{ action: 'c2pa.created', digitalSourceType: 'http://x' }],
      ingredientCount: 2,
      signer: { issuer: 'Org', commonName: 'CN' },
      signedAt: '2024-05-01T08:00:05+00:00',
      validationState: 'Valid',
      failureCodes: ['a'],
      successCodes: []
    })
  })

  it('is a report of nothing valid for input that is not a manifest at all', () => {
    expect(manifestReportFrom(null, 'x')).toEqual({
      claimGenerator: null,
      claimGeneratorInfo: [],
      title: null,
      actions: [],
      ingredientCount: 0,
      signer: null,
      signedAt: null,
      validationState: 'Invalid',
      failureCodes: [],
      successCodes: []
    })
  })

  it('takes the failures from validation_status when validation_results is missing', () => {
    expect(manifestReportFrom({}, { validation_status: [{ code: 'claimSignature.mismatch' }] }).failureCodes).toEqual(['claimSignature.mismatch'])
  })
})
