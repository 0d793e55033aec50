import { describe, expect, it } from 'vitest'
import { splitClauses } from '../../src/chat/dialogue/clauses.ts'

describe('the clauses of a message that may make several requests', () => {
  it('splits at sentence ends and at the words that join a second request', () => {
    expect(splitClauses('my parcel is late and also I was charged twice')).toEqual(['my parcel is late', 'I was charged twice'])
    expect(splitClauses('can i cancel my order and will it cost me anything')).toEqual(['can i cancel my order', 'will it cost me anything'])
  })

  it('keeps the question mark of a sentence that asks on its last clause', () => {
    expect(splitClauses('Is the postage back free? And do you need a picture of it?')).toEqual(['Is the postage back free?', 'And do you need a picture of it?'])
    expect(splitClauses('The lamp arrived broken. Can I get a new one?')).toEqual(['The lamp arrived broken', 'Can I get a new one?'])
  })

  it('leaves out pieces too short to be requests', () => {
    expect(splitClauses('thanks! where is order 4417?')).toEqual(['where is order 4417?'])
  })
})
