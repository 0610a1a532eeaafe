import { describe, expect, it } from 'vitest'
import { pathnameOf } from '../../src/handler.ts'

describe('pathnameOf (routing without parsing every URL)', () => {
  it.each([
    'http://a/connect/token',
    'https://a.example:8443/connect/token?x=1',
    'http://a',
    'http://a/',
    'http://a?x',
    'http://a#f',
    'http://a/x/../y',
    'http://a/x/./y',
    'http://a/%2e%2e/y',
    'http://a/a\\b',
    'HTTP://A/Connect/Token#f',
    'http://[::1]:3000/connect/token',
    'http://a/.well-known/openid-configuration',
    'http://a//x',
    'http://user:pw@a/x',
    'http://a/x y',
    'http://a/x\ty',
    'http://a/é',
    'http://a/x%2Fy',
    'http://a/x;y=1',
  ])('agrees with new URL(%j).pathname', (url) => {
    expect(pathnameOf(url)).toBe(new URL(url).pathname)
  })

  it('agrees with URL on random paths built from delicate characters', () => {
    const alphabet = ['a', 'Z', '0', '/', '.', '%', '2', 'e', '\\', '?', '#', ' ', '~', '-', '_', ';', 'é', '\t']
    let seed = 7
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed
    }
    for (let i = 0; i < 2000; i++) {
      const length = next() % 12
      const path = Array.from({ length }, () => alphabet[next() % alphabet.length]).join('')
      const url = `http://issuer.example/${path}`
      expect(pathnameOf(url), url).toBe(new URL(url).pathname)
    }
  })
})
