/**
 * English text normalisation shared by training and classification: the same message always becomes the same
 * tokens. Domain words (synonyms) come from the domain pack; what is here is the language itself.
 */
import { recogniseEntities, replaceEntities, type EntityKind, type EntitySpan } from './entities.ts'

/** Placeholders that replace entity values, so "order 48213" and "order #A-99812" read the same to the model. */
export const ENTITY_TOKENS: Readonly<Record<EntityKind, string>> = {
  email: 'xemailx',
  url: 'xurlx',
  date: 'xdatex',
  money: 'xmoneyx',
  order_number: 'xordernumx',
  number: 'xnumx'
}

/** Contractions and texting shorthand, spelled out. */
const SHORTHAND: ReadonlyMap<string, string> = new Map(Object.entries({
  cant: 'can not',
  cannot: 'can not',
  wont: 'will not',
  dont: 'do not',
  doesnt: 'does not',
  didnt: 'did not',
  isnt: 'is not',
  arent: 'are not',
  wasnt: 'was not',
  werent: 'were not',
  hadnt: 'had not',
  havent: 'have not',
  hasnt: 'has not',
  couldnt: 'could not',
  wouldnt: 'would not',
  shouldnt: 'should not',
  aint: 'is not',
  im: 'i am',
  ive: 'i have',
  id: 'i would',
  ill: 'i will',
  youre: 'you are',
  wanna: 'want to',
  gonna: 'going to',
  gotta: 'have to',
  hafta: 'have to',
  lemme: 'let me',
  gimme: 'give me',
  u: 'you',
  ya: 'you',
  yu: 'you',
  ur: 'your',
  r: 'are',
  y: 'why',
  pls: 'please',
  plz: 'please',
  plse: 'please',
  pleas: 'please',
  thx: 'thanks',
  thnx: 'thanks',
  thanx: 'thanks',
  ty: 'thanks',
  tnx: 'thanks',
  w: 'with',
  b4: 'before',
  '2day': 'today',
  bc: 'because',
  cuz: 'because',
  coz: 'because',
  abt: 'about',
  acct: 'account',
  acc: 'account',
  addr: 'address',
  pw: 'password',
  pwd: 'password',
  pswd: 'password',
  msg: 'message',
  info: 'information',
  asap: 'soon',
  ppl: 'people',
  wat: 'what',
  wut: 'what',
  whats: 'what is',
  wheres: 'where is',
  hows: 'how is',
  whens: 'when is',
  thats: 'that is',
  theres: 'there is',
  k: 'ok',
  okay: 'ok'
}))

const CONTRACTIONS = /\b(can|won)[’']t\b|n[’']t\b|[’'](m|re|ve|ll|d|s)\b/g
const CONTRACTION_ENDINGS: Record<string, string> = { m: ' am', re: ' are', ve: ' have', ll: ' will', d: ' would', s: '' }

function expandContraction (_match: string, canOrWont: string | undefined, ending: string | undefined): string {
  if (canOrWont !== undefined) return canOrWont === 'can' ? 'can not' : 'will not'
  return ending === undefined ? ' not' : CONTRACTION_ENDINGS[ending]!
}

const WORD = /[a-z0-9]+/g
/** "e-mail", "e mail": one word, as "email" is. */
const E_MAIL = /\be[- ]mail/g
const CENSORED = /([a-z])[*#@$%]+([a-z]*)/g

/**
 * Entities replaced by placeholders (`spans`, found in `text` by the recogniser), then lower case, accents removed,
 * contractions expanded, censored swearing ("f***ing") kept as one word; everything else but letters and digits
 * separates words.
 */
function prepare (text: string, spans: readonly EntitySpan[]): string {
  let prepared = replaceEntities(text, spans, ENTITY_TOKENS).toLowerCase()
  // Cheap tests first: most messages have no accents, apostrophes or asterisks.
  if (/[^ -~]/.test(prepared)) prepared = prepared.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
  if (/[’']/.test(prepared)) prepared = prepared.replace(CONTRACTIONS, expandContraction)
  if (/[a-z][*#@$%]/.test(prepared)) prepared = prepared.replace(CENSORED, '$1$2')
  if (prepared.includes('e-mail') || prepared.includes('e mail')) prepared = prepared.replace(E_MAIL, 'email')
  return prepared
}

/**
 * The words of a text, normalised, with shorthand spelled out ("u" → "you", "cant" → "can not"). `spans` are the
 * text's entities when the caller has already found them.
 */
export function wordsOf (text: string, spans: readonly EntitySpan[] = recogniseEntities(text)): string[] {
  const tokens: string[] = []
  for (const word of prepare(text, spans).match(WORD) ?? []) {
    const expanded = SHORTHAND.get(word)
    if (expanded === undefined) tokens.push(word)
    else for (const part of expanded.split(' ')) tokens.push(part)
  }
  return tokens
}

/** Letters repeated for emphasis ("pleeeease", "hiii") reduced to two, as most English doubles are. */
export function squeezeRepeats (word: string): string {
  return TRIPLE_LETTER.test(word) ? word.replace(/([a-z])\1{2,}/g, '$1$1') : word
}

const TRIPLE_LETTER = /([a-z])\1\1/
